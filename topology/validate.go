package topology

import (
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"time"

	"github.com/hashicorp/hcl/v2"
)

// Worker defaults.
const (
	DefaultTP                = 1
	DefaultMemFractionStatic = 0.88
	DefaultMaxBatchTokens    = 16384
	DefaultMaxRunning        = 256
)

// DefaultLatency is a link's latency when the HCL does not say.
const DefaultLatency = 10 * time.Microsecond

// DefaultWorker returns a worker with every optional field at its default
// (KVBudgetTokens 0 = derive from GPU memory).
func DefaultWorker(name string, kind Kind, gpu, model string) Worker {
	return Worker{
		Name:              name,
		Kind:              kind,
		GPU:               gpu,
		Model:             model,
		TP:                DefaultTP,
		MemFractionStatic: DefaultMemFractionStatic,
		MaxBatchTokens:    DefaultMaxBatchTokens,
		MaxRunning:        DefaultMaxRunning,
	}
}

// DefaultGenerator returns the synthetic agentic workload defaults.
func DefaultGenerator() Generator {
	return Generator{
		Sessions:       16,
		Turns:          24,
		SystemTokens:   4000,
		FirstTokens:    2000,
		AppendTokens:   600,
		OutputTokens:   150,
		ThinkTime:      2500 * time.Millisecond,
		SessionStagger: time.Second,
		BlockTokens:    24,
	}
}

// DefaultWorkload returns the workload used when a scenario has no workload
// block: the default generator on the virtual clock, closed loop.
func DefaultWorkload() Workload {
	return Workload{
		Generator:      DefaultGenerator(),
		Clock:          ClockVirtual,
		TimeScale:      1,
		Seed:           1,
		Loop:           LoopClosed,
		SampleInterval: time.Second,
	}
}

// checker accumulates diagnostics while turning decoded HCL into a Spec.
type checker struct {
	opts  Options
	diags hcl.Diagnostics
	// failed holds the subjects of decoding errors. A semantic diagnostic
	// whose range overlaps one is dropped: the value it would complain
	// about was never decoded, and HCL already said why.
	failed []hcl.Range
}

// decoded records diagnostics from HCL decoding and reports whether they
// are free of errors.
func (c *checker) decoded(diags hcl.Diagnostics) bool {
	for _, d := range diags {
		if d.Severity == hcl.DiagError && d.Subject != nil {
			c.failed = append(c.failed, *d.Subject)
		}
	}
	c.diags = append(c.diags, diags...)
	return !diags.HasErrors()
}

func overlaps(a, b hcl.Range) bool {
	return a.Filename == b.Filename && a.Start.Byte <= b.End.Byte && b.Start.Byte <= a.End.Byte
}

// errorf adds an error diagnostic at subject.
func (c *checker) errorf(subject hcl.Range, summary, format string, args ...any) {
	if subject != (hcl.Range{}) {
		for _, f := range c.failed {
			if overlaps(f, subject) {
				return
			}
		}
	}
	d := &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   fmt.Sprintf(format, args...),
	}
	if subject != (hcl.Range{}) {
		d.Subject = subject.Ptr()
	}
	c.diags = append(c.diags, d)
}

// Checks for checkNum: each returns "" when v is fine, else what is wrong.

func atLeast[T cmp.Ordered](lo T) func(T) string {
	return func(v T) string {
		if v < lo {
			return fmt.Sprintf("must be at least %v", lo)
		}
		return ""
	}
}

func positive[T int | float64](v T) string {
	if v <= 0 {
		return "must be greater than 0"
	}
	return ""
}

func unitInterval(v float64) string {
	if v <= 0 || v > 1 {
		return "must be in (0, 1], i.e. greater than 0 and at most 1"
	}
	return ""
}

// checkNum validates an optional number: nil gives def, an invalid value a
// diagnostic at rng (and def).
func checkNum[T int | uint64 | float64](c *checker, p *T, rng hcl.Range, def T, name, help string, check func(T) string) T {
	if p == nil {
		return def
	}
	v := *p
	if f, ok := any(v).(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
		c.errorf(rng, fmt.Sprintf("Invalid value for %q", name), "%s must be a finite number.", describe(name, help))
		return def
	}
	if check != nil {
		if problem := check(v); problem != "" {
			c.errorf(rng, fmt.Sprintf("Invalid value for %q", name), "%s %s; got %v.", describe(name, help), problem, v)
			return def
		}
	}
	return v
}

func describe(name, help string) string {
	if help == "" {
		return fmt.Sprintf("%q", name)
	}
	return fmt.Sprintf("%q (%s)", name, help)
}

// checkDuration parses an optional duration attribute; min is the smallest
// accepted value.
func (c *checker) checkDuration(p *string, rng hcl.Range, def, minimum time.Duration, name, help string) time.Duration {
	if p == nil {
		return def
	}
	d, err := parseDuration(*p)
	if err != nil {
		c.errorf(rng, fmt.Sprintf("Invalid duration for %q", name), "%s: %s.", describe(name, help), err)
		return def
	}
	if d < minimum {
		c.errorf(rng, fmt.Sprintf("Invalid duration for %q", name), "%s must be at least %s; got %s.", describe(name, help), minimum, d)
		return def
	}
	return d
}

// checkEnum validates an optional string against a fixed set.
func (c *checker) checkEnum(p *string, rng hcl.Range, def, name string, allowed ...string) string {
	if p == nil {
		return def
	}
	for _, a := range allowed {
		if *p == a {
			return a
		}
	}
	c.errorf(rng, fmt.Sprintf("Invalid value for %q", name), "%q must be %s; got %q.%s",
		name, quotedOr(allowed), *p, didYouMean(*p, allowed))
	return def
}

// checkPreset validates a gpu/model preset name.
func (c *checker) checkPreset(v string, rng hcl.Range, what, attr string, known func(string) bool, names []string) {
	switch {
	case rng == (hcl.Range{}):
		// Absent: gohcl already reported the missing required argument.
	case v == "":
		c.errorf(rng, fmt.Sprintf("Empty %s preset", what), "%q must name a %s preset.", attr, what)
	case known != nil && !known(v):
		extra := didYouMean(v, names)
		if extra == "" && len(names) > 0 && len(names) <= 24 {
			extra = " Known presets: " + quotedList(names) + "."
		}
		c.errorf(rng, fmt.Sprintf("Unknown %s preset", what), "There is no %s preset named %q.%s", what, v, extra)
	}
}

var workerName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// declared is a worker's kind and where it was declared.
type declared struct {
	kind Kind
	wh   *workerHCL
}

// build turns the decoded file into a Spec, adding a diagnostic for every
// violated rule.
func (c *checker) build(filename string, fh *fileHCL, ctx *hcl.EvalContext, fileStart hcl.Range) *Spec {
	spec := &Spec{Source: filename}
	if fh.Name != nil {
		spec.Name = *fh.Name
	}

	// Workers, in file order per kind; names unique across kinds.
	byName := map[string]declared{}
	var order []string
	addWorkers := func(kind Kind, whs []workerHCL, dst *[]Worker) {
		for i := range whs {
			wh := &whs[i]
			w := c.worker(kind, wh)
			if !workerName.MatchString(wh.Name) {
				c.errorf(wh.NameRange, "Invalid worker name",
					"Worker names must start with a letter or digit and contain only letters, digits, '_', '.' and '-' (they appear in logs and CSV files); got %q.", wh.Name)
			}
			if prev, dup := byName[wh.Name]; dup {
				c.errorf(wh.NameRange, "Duplicate worker name",
					"A %s worker named %q was already declared at %s. Worker names must be unique across prefill, decode and fused blocks.",
					prev.kind, wh.Name, prev.wh.DefRange)
				continue
			}
			*dst = append(*dst, w)
			byName[wh.Name] = declared{kind: kind, wh: wh}
			order = append(order, wh.Name)
		}
	}
	prefill := make([]workerHCL, len(fh.Prefill))
	for i, p := range fh.Prefill {
		prefill[i] = p.worker()
	}
	addWorkers(KindPrefill, prefill, &spec.Prefill)
	addWorkers(KindDecode, fh.Decode, &spec.Decode)
	addWorkers(KindFused, fh.Fused, &spec.Fused)
	nWorkers := len(spec.Prefill) + len(spec.Decode) + len(spec.Fused)
	if nWorkers == 0 {
		c.errorf(fileStart, "No workers",
			"A scenario needs at least one worker: declare prefill \"NAME\" { ... } and decode \"NAME\" { ... } blocks (disaggregated policies) or fused \"NAME\" { ... } blocks.")
	}

	c.links(spec, fh.Links, byName, order)

	// Router: exactly one.
	var pol *policy
	switch len(fh.Routers) {
	case 0:
		c.errorf(fileStart, "Missing router block",
			"A scenario needs exactly one router block; its label is the policy, one of %s. For example: router \"kvc\" { }.", quotedList(Policies()))
	default:
		for _, extra := range fh.Routers[1:] {
			c.errorf(extra.DefRange, "Duplicate router block",
				"Only one router block is allowed; another was declared at %s.", fh.Routers[0].DefRange)
		}
		rh := &fh.Routers[0]
		pol, spec.Router = decodeRouter(c, rh, ctx)
		if pol != nil && nWorkers > 0 {
			c.policyTopology(pol, rh, spec, fh, byName)
		}
	}

	// Workload: at most one.
	spec.Workload = DefaultWorkload()
	if len(fh.Workloads) > 0 {
		for _, extra := range fh.Workloads[1:] {
			c.errorf(extra.DefRange, "Duplicate workload block",
				"Only one workload block is allowed; another was declared at %s.", fh.Workloads[0].DefRange)
		}
		spec.Workload = c.workload(filename, &fh.Workloads[0])
	}
	return spec
}

func (c *checker) worker(kind Kind, wh *workerHCL) Worker {
	w := DefaultWorker(wh.Name, kind, wh.GPU, wh.Model)
	c.checkPreset(wh.GPU, wh.GPURange, "GPU", "gpu", c.opts.KnownGPU, c.opts.GPUNames)
	c.checkPreset(wh.Model, wh.ModelRange, "model", "model", c.opts.KnownModel, c.opts.ModelNames)
	w.TP = checkNum(c, wh.TP, wh.TPRange, w.TP, "tp", "tensor-parallel degree", atLeast(1))
	w.KVBudgetTokens = checkNum(c, wh.KVBudgetTokens, wh.KVBudgetTokensRange, 0, "kv_budget_tokens",
		"KV pool size in tokens; 0 derives it from GPU memory", atLeast(0))
	w.MemFractionStatic = checkNum(c, wh.MemFractionStatic, wh.MemFractionStaticRange, w.MemFractionStatic,
		"mem_fraction_static", "fraction of GPU memory for weights and KV pool", unitInterval)
	w.MaxBatchTokens = checkNum(c, wh.MaxBatchTokens, wh.MaxBatchTokensRange, w.MaxBatchTokens,
		"max_batch_tokens", "per-iteration token budget", atLeast(1))
	w.MaxRunning = checkNum(c, wh.MaxRunning, wh.MaxRunningRange, w.MaxRunning,
		"max_running", "cap on concurrently decoding requests", atLeast(1))
	return w
}

func (c *checker) links(spec *Spec, lhs []linkHCL, byName map[string]declared, order []string) {
	type pair struct{ from, to string }
	seen := map[pair]*linkHCL{}
	type nic struct{ worker, device string }
	nics := map[nic]*linkHCL{}
	nicBW := map[nic]float64{}

	endpoint := func(name string, rng hcl.Range, role string, want Kind) bool {
		d, ok := byName[name]
		switch {
		case !ok:
			c.errorf(rng, "Unknown worker",
				"The link %s %q is not a declared worker.%s A link goes from a prefill worker to a decode worker: link \"PREFILL\" \"DECODE\" { ... }.",
				role, name, didYouMean(name, order))
			return false
		case d.kind != want:
			c.errorf(rng, "Invalid link endpoint",
				"The link %s must be a %s worker, but %q is a %s worker (declared at %s). A link goes from a prefill worker to a decode worker: link \"PREFILL\" \"DECODE\" { ... }.",
				role, want, name, d.kind, d.wh.DefRange)
			return false
		}
		return true
	}

	for i := range lhs {
		lh := &lhs[i]
		okFrom := endpoint(lh.From, lh.FromRange, "source", KindPrefill)
		okTo := endpoint(lh.To, lh.ToRange, "destination", KindDecode)

		l := Link{From: lh.From, To: lh.To, Device: lh.Device, Latency: DefaultLatency}
		switch lh.Transport {
		case string(TransportRDMA), string(TransportTCP):
			l.Transport = Transport(lh.Transport)
		default:
			if lh.TransportRange != (hcl.Range{}) {
				allowed := []string{string(TransportRDMA), string(TransportTCP)}
				c.errorf(lh.TransportRange, "Invalid transport",
					"\"transport\" must be %s; got %q.%s", quotedOr(allowed), lh.Transport, didYouMean(lh.Transport, allowed))
			}
		}
		if lh.DeviceRange != (hcl.Range{}) && lh.Device == "" {
			c.errorf(lh.DeviceRange, "Empty NIC device",
				"\"device\" names the NIC on the prefill side, e.g. \"mlx5_0\"; links naming the same device on the same prefill worker share its bandwidth.")
		}
		if lh.BandwidthRange != (hcl.Range{}) {
			bw, err := ParseBandwidth(lh.Bandwidth)
			if err != nil {
				c.errorf(lh.BandwidthRange, "Invalid bandwidth", "%s.", err)
			} else {
				l.Bandwidth = bw
			}
		}
		l.Latency = c.checkDuration(lh.Latency, lh.LatencyRange, DefaultLatency, 0, "latency", "one-way link latency")

		if okFrom && okTo {
			k := pair{lh.From, lh.To}
			if prev, dup := seen[k]; dup {
				c.errorf(lh.DefRange, "Duplicate link",
					"A link from %q to %q was already declared at %s. Declare each (prefill, decode) pair once.", lh.From, lh.To, prev.DefRange)
				continue
			}
			seen[k] = lh
		}
		if okFrom && l.Device != "" && l.Bandwidth > 0 {
			n := nic{lh.From, l.Device}
			if prev, ok := nics[n]; ok && nicBW[n] != l.Bandwidth {
				c.errorf(lh.BandwidthRange, "Inconsistent NIC bandwidth",
					"Links from %q over device %q share one NIC, but the link at %s gives it a bandwidth of %s (%g bytes/s) and this one %q (%g bytes/s). Use the same bandwidth, or different devices.",
					lh.From, l.Device, prev.DefRange, prev.Bandwidth, nicBW[n], lh.Bandwidth, l.Bandwidth)
			} else if !ok {
				nics[n], nicBW[n] = lh, l.Bandwidth
			}
		}
		spec.Links = append(spec.Links, l)
	}
}

// policyTopology checks the worker kinds and links a policy needs.
func (c *checker) policyTopology(pol *policy, rh *routerHCL, spec *Spec, fh *fileHCL, byName map[string]declared) {
	count := map[Kind]int{KindPrefill: len(fh.Prefill), KindDecode: len(fh.Decode), KindFused: len(fh.Fused)}
	for _, k := range pol.kinds {
		if count[k] == 0 {
			c.errorf(rh.PolicyRange, fmt.Sprintf("No %s workers", k),
				"The %q policy (%s) needs at least one %s worker: add a %s \"NAME\" { ... } block.", pol.name, pol.doc, k, k)
		}
	}
	unused := func(k Kind, whs []workerHCL) {
		if pol.uses(k) {
			return
		}
		for i := range whs {
			c.errorf(whs[i].DefRange, "Worker not used by the router policy",
				"The %q policy routes to %s workers only, so %s worker %q would never receive a request. Remove it or choose another policy.",
				pol.name, kindList(pol.kinds), k, whs[i].Name)
		}
	}
	prefill := make([]workerHCL, len(fh.Prefill))
	for i, p := range fh.Prefill {
		prefill[i] = p.worker()
	}
	unused(KindPrefill, prefill)
	unused(KindDecode, fh.Decode)
	unused(KindFused, fh.Fused)

	if !pol.fullMesh {
		return
	}
	linked := map[[2]string]bool{}
	for _, l := range spec.Links {
		linked[[2]string{l.From, l.To}] = true
	}
	for _, d := range spec.Decode {
		var missing []string
		for _, p := range spec.Prefill {
			if !linked[[2]string{p.Name, d.Name}] {
				missing = append(missing, p.Name)
			}
		}
		if len(missing) == 0 {
			continue
		}
		noun := "worker"
		if len(missing) > 1 {
			noun = "workers"
		}
		c.errorf(byName[d.Name].wh.DefRange, "Missing link",
			"The %q policy may move KV from any prefill worker to any decode worker, but decode worker %q has no link from prefill %s %s. Add, for example:\n\nlink %q %q {\n  transport = \"rdma\"\n  device    = \"mlx5_0\"\n  bandwidth = \"200Gbps\"\n}",
			pol.name, d.Name, noun, quotedList(missing), missing[0], d.Name)
	}
}

func (c *checker) workload(filename string, wh *workloadHCL) Workload {
	w := DefaultWorkload()
	w.Clock = c.checkEnum(wh.Clock, wh.ClockRange, w.Clock, "clock", ClockVirtual, ClockWall)
	w.TimeScale = checkNum(c, wh.TimeScale, wh.TimeScaleRange, w.TimeScale, "time_scale",
		"wall clock: emulated d takes d/time_scale real time", positive[float64])
	w.Seed = checkNum(c, wh.Seed, wh.SeedRange, w.Seed, "seed", "", nil)
	w.Loop = c.checkEnum(wh.Loop, wh.LoopRange, w.Loop, "loop", LoopOpen, LoopClosed)
	w.MaxRequests = checkNum(c, wh.MaxRequests, wh.MaxRequestsRange, w.MaxRequests, "max_requests",
		"0 replays every request", atLeast(0))
	w.SampleInterval = c.checkDuration(wh.SampleInterval, wh.SampleIntervalRange, w.SampleInterval,
		time.Microsecond, "sample_interval", "instances.csv sampling interval")

	if wh.Trace != nil {
		switch {
		case *wh.Trace == "":
			c.errorf(wh.TraceRange, "Empty trace path", "\"trace\" must name a trace file or directory; remove it to use the generator.")
		default:
			base := c.opts.BaseDir
			if base == "" {
				base = filepath.Dir(filename)
			}
			w.Trace = *wh.Trace
			if !filepath.IsAbs(w.Trace) {
				w.Trace = filepath.Join(base, w.Trace)
			}
		}
	}
	if wh.Format != nil {
		switch {
		case wh.Trace == nil:
			c.errorf(wh.FormatRange, "Format without trace", "\"format\" names the format of the trace file; it only applies together with \"trace\".")
		case *wh.Format == "":
			// "" means detect.
		case c.opts.KnownFormat != nil && !c.opts.KnownFormat(*wh.Format):
			extra := didYouMean(*wh.Format, c.opts.FormatNames)
			if extra == "" && len(c.opts.FormatNames) > 0 {
				extra = " Known formats: " + quotedList(c.opts.FormatNames) + "."
			}
			c.errorf(wh.FormatRange, "Unknown trace format", "There is no trace format named %q.%s", *wh.Format, extra)
		default:
			w.Format = *wh.Format
		}
	}

	for i := range wh.Generators {
		gh := &wh.Generators[i]
		if i > 0 {
			c.errorf(gh.DefRange, "Duplicate generator block",
				"Only one generator block is allowed; another was declared at %s.", wh.Generators[0].DefRange)
			continue
		}
		if wh.Trace != nil {
			c.errorf(gh.DefRange, "Conflicting workload sources",
				"The workload has both a trace (%s) and a generator block; they are mutually exclusive. Remove one.", wh.TraceRange)
		}
		if gh.Kind != "agentic" {
			c.errorf(gh.KindRange, "Unknown generator",
				"There is no generator named %q.%s The only generator is \"agentic\".", gh.Kind, didYouMean(gh.Kind, []string{"agentic"}))
		}
		w.Generator = c.generator(gh)
	}
	return w
}

func (c *checker) generator(gh *generatorHCL) Generator {
	g := DefaultGenerator()
	g.Sessions = checkNum(c, gh.Sessions, gh.SessionsRange, g.Sessions, "sessions", "number of sessions", atLeast(1))
	g.Turns = checkNum(c, gh.Turns, gh.TurnsRange, g.Turns, "turns", "turns per session", atLeast(1))
	g.SystemTokens = checkNum(c, gh.SystemTokens, gh.SystemTokensRange, g.SystemTokens, "system_tokens", "shared system prefix", atLeast(0))
	g.FirstTokens = checkNum(c, gh.FirstTokens, gh.FirstTokensRange, g.FirstTokens, "first_tokens", "first user message", atLeast(1))
	g.AppendTokens = checkNum(c, gh.AppendTokens, gh.AppendTokensRange, g.AppendTokens, "append_tokens", "mean tokens appended per turn", atLeast(0))
	g.OutputTokens = checkNum(c, gh.OutputTokens, gh.OutputTokensRange, g.OutputTokens, "output_tokens", "mean output tokens per turn", atLeast(1))
	g.ThinkTime = c.checkDuration(gh.ThinkTime, gh.ThinkTimeRange, g.ThinkTime, 0, "think_time", "mean think/tool time between turns")
	g.SessionStagger = c.checkDuration(gh.SessionStagger, gh.SessionStaggerRange, g.SessionStagger, 0, "session_stagger", "mean gap between session starts")
	g.BlockTokens = checkNum(c, gh.BlockTokens, gh.BlockTokensRange, g.BlockTokens, "block_tokens", "block size of the generated hashes", atLeast(1))
	return g
}

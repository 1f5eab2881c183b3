package topology

import (
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
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

// DefaultDRAMBandwidth is the DRAM-tier load rate (bytes/s): a PCIe 5.0
// x16 link's order of magnitude.
const DefaultDRAMBandwidth = 25e9

func unitIntervalClosed(v float64) string {
	if !(v >= 0 && v <= 1) {
		return "must be in [0, 1]"
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
	d, _ := c.checkDurationOK(p, rng, def, minimum, name, help)
	return d
}

// checkDurationOK is checkDuration that also reports whether the value was
// valid (or absent).
func (c *checker) checkDurationOK(p *string, rng hcl.Range, def, minimum time.Duration, name, help string) (time.Duration, bool) {
	if p == nil {
		return def, !c.bad(rng)
	}
	d, err := parseDuration(*p)
	if err != nil {
		c.errorf(rng, fmt.Sprintf("Invalid duration for %q", name), "%s: %s.", describe(name, help), err)
		return def, false
	}
	if d < minimum {
		c.errorf(rng, fmt.Sprintf("Invalid duration for %q", name), "%s must be at least %s; got %s.", describe(name, help), minimum, d)
		return def, false
	}
	return d, true
}

// optDuration parses an optional duration override (>= 0): nil when absent
// or invalid.
func (c *checker) optDuration(p *string, rng hcl.Range, name, help string) *time.Duration {
	if p == nil {
		return nil
	}
	d, ok := c.checkDurationOK(p, rng, 0, 0, name, help)
	if !ok {
		return nil
	}
	return &d
}

// optFraction validates an optional fraction override in (0, 1]: nil when
// absent or invalid.
func (c *checker) optFraction(p *float64, rng hcl.Range, name, help string) *float64 {
	if p == nil {
		return nil
	}
	before := len(c.diags)
	v := checkNum(c, p, rng, 0, name, help, unitInterval)
	if len(c.diags) != before || v == 0 {
		return nil
	}
	return &v
}

// optSize parses an optional memory size override (bytes, >= 0): nil when
// absent or invalid.
func (c *checker) optSize(p *string, rng hcl.Range, name, help string) *float64 {
	if p == nil {
		return nil
	}
	v, err := ParseSize(*p)
	if err != nil {
		c.errorf(rng, fmt.Sprintf("Invalid size for %q", name), "%s: %s.", describe(name, help), err)
		return nil
	}
	return &v
}

// bad reports whether an attribute at rng failed to decode (HCL already
// reported it, and its value was not stored).
func (c *checker) bad(rng hcl.Range) bool {
	if rng == (hcl.Range{}) {
		return false
	}
	for _, f := range c.failed {
		if overlaps(f, rng) {
			return true
		}
	}
	return false
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

	// Routing: one router block, or the bucket form.
	if fh.usesBuckets() {
		c.bucketRouting(spec, fh, ctx, byName, fileStart)
	} else {
		c.router(spec, fh, ctx, byName, fileStart, nWorkers)
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

// router checks the single router block and the workers its policy needs.
func (c *checker) router(spec *Spec, fh *fileHCL, ctx *hcl.EvalContext, byName map[string]declared, fileStart hcl.Range, nWorkers int) {
	if len(fh.Routers) == 0 {
		c.errorf(fileStart, "Missing router block",
			"A scenario needs exactly one router block; its label is the policy, one of %s. For example: router \"kvc\" { }. Or route over fused workers in input-length buckets with bucket, global_router and local_router blocks.", quotedList(Policies()))
		return
	}
	for _, extra := range fh.Routers[1:] {
		c.errorf(extra.DefRange, "Duplicate router block",
			"Only one router block is allowed; another was declared at %s.", fh.Routers[0].DefRange)
	}
	rh := &fh.Routers[0]
	pol, out := decodeRouter(c, rh, ctx)
	spec.Router = out.Router
	defaultEpsilon(rh, spec) // topology/kvcpaper.go
	if pol == nil || nWorkers == 0 {
		return
	}
	c.policyTopology(pol, rh, spec, fh, byName)
	if pol.local {
		// One pool: an implicit bucket holding every fused worker.
		spec.Buckets = []Bucket{implicitBucket(spec.Fused)}
		spec.GlobalRouter = DefaultGlobalRouter(GlobalStrictInputLength)
		spec.LocalRouter = out.Local
	}
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
	if kind != KindFused {
		for _, a := range []struct {
			set  bool
			rng  hcl.Range
			name string
		}{{wh.DRAMCacheTokens != nil, wh.DRAMCacheTokensRange, "dram_cache_tokens"}, {wh.DRAMBandwidth != nil, wh.DRAMBandwidthRange, "dram_bandwidth"}} {
			if a.set {
				c.errorf(a.rng, "DRAM tier on a "+string(kind)+" worker",
					"%q configures the DRAM (L1) prefix-cache tier of a fused worker; %s workers have none.", a.name, kind)
			}
		}
	} else {
		w.DRAMCacheTokens = checkNum(c, wh.DRAMCacheTokens, wh.DRAMCacheTokensRange, 0, "dram_cache_tokens",
			"DRAM (L1) prefix-cache tier in tokens; 0 = none", atLeast(0))
		if wh.DRAMBandwidth != nil {
			bw, err := ParseBandwidth(*wh.DRAMBandwidth)
			if err != nil {
				c.errorf(wh.DRAMBandwidthRange, "Invalid bandwidth for \"dram_bandwidth\"",
					"\"dram_bandwidth\" (how fast a prefix is loaded back from the DRAM tier): %s.", err)
			} else {
				w.DRAMBandwidth = bw
			}
		}
	}
	w.Perf = PerfOverrides{
		MFU: c.optFraction(wh.MFU, wh.MFURange, "mfu",
			"achieved fraction of peak FLOP/s when compute bound"),
		MBU: c.optFraction(wh.MBU, wh.MBURange, "mbu",
			"achieved fraction of peak HBM bandwidth when memory bound"),
		CommEfficiency: c.optFraction(wh.CommEfficiency, wh.CommEfficiencyRange, "comm_efficiency",
			"achieved fraction of the GPU interconnect bandwidth in TP all-reduces"),
		StepOverhead: c.optDuration(wh.StepOverhead, wh.StepOverheadRange, "step_overhead",
			"fixed cost of every forward pass that decodes"),
		PrefillOverhead: c.optDuration(wh.PrefillOverhead, wh.PrefillOverheadRange, "prefill_overhead",
			"fixed cost of every prefill-only forward pass"),
		AllReduceLatency: c.optDuration(wh.AllReduceLatency, wh.AllReduceLatencyRange, "allreduce_latency",
			"fixed cost of one tensor-parallel all-reduce"),
		ReservedMemory: c.optSize(wh.ReservedMemory, wh.ReservedMemoryRange, "reserved_memory",
			"memory per GPU taken before the KV pool is sized, e.g. \"1.1GiB\""),
	}
	return w
}

func (c *checker) links(spec *Spec, lhs []linkHCL, byName map[string]declared, order []string) {
	type pair struct{ from, to string }
	seen := map[pair]*linkHCL{}
	// first[nic][attr] is the first link over the NIC with a valid attr.
	type nicAttr struct{ worker, device, attr string }
	type firstLink struct {
		lh *linkHCL
		l  Link
	}
	first := map[nicAttr]firstLink{}

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
		l, valid := c.link(lh)

		if okFrom && okTo {
			k := pair{lh.From, lh.To}
			if prev, dup := seen[k]; dup {
				c.errorf(lh.DefRange, "Duplicate link",
					"A link from %q to %q was already declared at %s. Declare each (prefill, decode) pair once.", lh.From, lh.To, prev.DefRange)
				continue
			}
			seen[k] = lh
		}
		if okFrom && l.Device != "" {
			// Links over one device share one NIC: they must describe it alike.
			for _, p := range nicProps {
				if !valid[p.attr] {
					continue
				}
				k := nicAttr{lh.From, l.Device, p.attr}
				prev, ok := first[k]
				if !ok {
					first[k] = firstLink{lh, l}
					continue
				}
				if p.same(&prev.l, &l) {
					continue
				}
				subject := p.rng(lh)
				if subject == (hcl.Range{}) {
					subject = lh.DefRange
				}
				c.errorf(subject, "Inconsistent NIC "+p.what,
					"Links from %q over device %q share one NIC, but the link at %s gives it %s %s and this one %s. Give every link over one device the same %q (set it on all of them or on none), or use different devices.",
					lh.From, l.Device, prev.lh.DefRange, p.what, p.show(prev.lh, &prev.l), p.show(lh, &l), p.attr)
			}
		}
		spec.Links = append(spec.Links, l)
	}
}

// nicProp is a link attribute that describes the NIC rather than the link:
// every link over one device must agree on it.
type nicProp struct {
	attr string // HCL attribute
	what string // noun for diagnostics
	same func(a, b *Link) bool
	show func(lh *linkHCL, l *Link) string // the value as written, for diagnostics
	rng  func(lh *linkHCL) hcl.Range
}

var nicProps = []nicProp{
	{
		attr: "transport", what: "transport",
		same: func(a, b *Link) bool { return a.Transport == b.Transport },
		show: func(_ *linkHCL, l *Link) string { return fmt.Sprintf("%q", l.Transport) },
		rng:  func(lh *linkHCL) hcl.Range { return lh.TransportRange },
	},
	{
		attr: "bandwidth", what: "bandwidth",
		same: func(a, b *Link) bool { return a.Bandwidth == b.Bandwidth },
		show: func(lh *linkHCL, l *Link) string { return fmt.Sprintf("%q (%g bytes/s)", lh.Bandwidth, l.Bandwidth) },
		rng:  func(lh *linkHCL) hcl.Range { return lh.BandwidthRange },
	},
	{
		attr: "latency", what: "latency",
		same: func(a, b *Link) bool { return a.Latency == b.Latency },
		show: func(lh *linkHCL, l *Link) string {
			if lh.Latency == nil {
				return fmt.Sprintf("%s (the default)", l.Latency)
			}
			return l.Latency.String()
		},
		rng: func(lh *linkHCL) hcl.Range { return lh.LatencyRange },
	},
	{
		attr: "efficiency", what: "efficiency",
		same: func(a, b *Link) bool { return a.Efficiency == b.Efficiency },
		show: func(lh *linkHCL, l *Link) string {
			if lh.Efficiency == nil {
				return "the transport default"
			}
			return fmt.Sprintf("%g", l.Efficiency)
		},
		rng: func(lh *linkHCL) hcl.Range { return lh.EfficiencyRange },
	},
	{
		attr: "max_rate", what: "rate ceiling",
		same: func(a, b *Link) bool { return a.MaxRate == b.MaxRate },
		show: func(lh *linkHCL, l *Link) string {
			if lh.MaxRate == nil {
				return "the transport default"
			}
			return fmt.Sprintf("%q (%g bytes/s)", *lh.MaxRate, l.MaxRate)
		},
		rng: func(lh *linkHCL) hcl.Range { return lh.MaxRateRange },
	},
	{
		attr: "setup", what: "setup cost",
		same: func(a, b *Link) bool { return sameDuration(a.Setup, b.Setup) },
		show: func(_ *linkHCL, l *Link) string {
			if l.Setup == nil {
				return "the transport default"
			}
			return l.Setup.String()
		},
		rng: func(lh *linkHCL) hcl.Range { return lh.SetupRange },
	},
}

func sameDuration(a, b *time.Duration) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// link checks one link block's own attributes and faults. valid says which
// NIC properties (nicProps attrs) hold a checked value.
func (c *checker) link(lh *linkHCL) (Link, map[string]bool) {
	valid := map[string]bool{}
	l := Link{From: lh.From, To: lh.To, Device: lh.Device, Latency: DefaultLatency}
	switch lh.Transport {
	case string(TransportRDMA), string(TransportTCP):
		l.Transport = Transport(lh.Transport)
		valid["transport"] = true
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
	if lh.BandwidthRange != (hcl.Range{}) && !c.bad(lh.BandwidthRange) {
		bw, err := ParseBandwidth(lh.Bandwidth)
		if err != nil {
			c.errorf(lh.BandwidthRange, "Invalid bandwidth", "%s.", err)
		} else {
			l.Bandwidth = bw
			valid["bandwidth"] = true
		}
	}
	l.Latency, valid["latency"] = c.checkDurationOK(lh.Latency, lh.LatencyRange, DefaultLatency, 0, "latency", "one-way link latency")

	if lh.Efficiency != nil {
		if e := c.optFraction(lh.Efficiency, lh.EfficiencyRange, "efficiency",
			"fraction of the line rate the transport achieves; absent = the transport default"); e != nil {
			l.Efficiency = *e
			valid["efficiency"] = true
		}
	} else {
		valid["efficiency"] = !c.bad(lh.EfficiencyRange)
	}
	if lh.MaxRate != nil {
		r, err := ParseBandwidth(*lh.MaxRate)
		if err != nil {
			c.errorf(lh.MaxRateRange, "Invalid bandwidth for \"max_rate\"",
				"\"max_rate\" (the NIC's rate ceiling whatever the line rate; absent = the transport default): %s.", err)
		} else {
			l.MaxRate = r
			valid["max_rate"] = true
		}
	} else {
		valid["max_rate"] = !c.bad(lh.MaxRateRange)
	}
	if lh.Setup != nil {
		l.Setup = c.optDuration(lh.Setup, lh.SetupRange, "setup", "per-transfer setup cost; absent = the transport default")
		valid["setup"] = l.Setup != nil
	} else {
		valid["setup"] = !c.bad(lh.SetupRange)
	}

	for i := range lh.Faults {
		if f, ok := c.fault(&lh.Faults[i]); ok {
			l.Faults = append(l.Faults, f)
		}
	}
	return l, valid
}

// fault checks one fault block: at >= 0 and exactly one of degrade (in
// (0, 1]), cut = true and restore = true.
func (c *checker) fault(fh *faultHCL) (LinkFault, bool) {
	const usage = "A fault block takes \"at\" and exactly one of degrade = FACTOR (0 < FACTOR <= 1), cut = true or restore = true, e.g. fault { at = \"30s\"  degrade = 0.5 }."
	var f LinkFault
	ok := fh.AtRange != (hcl.Range{}) && !c.bad(fh.AtRange)
	if ok {
		f.At, ok = c.checkDurationOK(&fh.At, fh.AtRange, 0, 0, "at", "emulated time of the fault from the start of the run")
	}

	type kindAttr struct {
		kind string
		rng  hcl.Range
	}
	var set []kindAttr
	if fh.Degrade != nil || c.bad(fh.DegradeRange) {
		set = append(set, kindAttr{FaultDegrade, fh.DegradeRange})
	}
	if fh.Cut != nil || c.bad(fh.CutRange) {
		set = append(set, kindAttr{FaultCut, fh.CutRange})
	}
	if fh.Restore != nil || c.bad(fh.RestoreRange) {
		set = append(set, kindAttr{FaultRestore, fh.RestoreRange})
	}
	switch len(set) {
	case 0:
		// Unless HCL already complained about the block's content (a
		// misspelt "degrade", say).
		if !c.bad(bodyRange(fh.Body)) {
			c.errorf(fh.DefRange, "Empty fault block", "This fault block does nothing. %s", usage)
		}
		return f, false
	case 1:
	default:
		// Point at the second kind in source order.
		slices.SortFunc(set, func(a, b kindAttr) int { return a.rng.Start.Byte - b.rng.Start.Byte })
		c.errorf(set[1].rng, "Conflicting fault kinds",
			"This fault block sets both %q and %q, but a fault block does one thing. Split it into two fault blocks (they may have the same \"at\"). %s",
			set[0].kind, set[1].kind, usage)
		return f, false
	}

	k := set[0]
	f.Kind = k.kind
	switch k.kind {
	case FaultDegrade:
		if fh.Degrade == nil {
			return f, false // decoding failed; HCL said why
		}
		before := len(c.diags)
		f.Factor = checkNum(c, fh.Degrade, fh.DegradeRange, 0, "degrade",
			"factor the NIC's effective rate is multiplied by; degradations compound until a restore", unitInterval)
		ok = ok && len(c.diags) == before
	case FaultCut:
		if fh.Cut == nil {
			return f, false
		}
		if !*fh.Cut {
			c.errorf(fh.CutRange, "Invalid value for \"cut\"", "\"cut\" must be true: a fault with cut = false does nothing. Remove the block, or use restore = true to end a cut. %s", usage)
			ok = false
		}
	case FaultRestore:
		if fh.Restore == nil {
			return f, false
		}
		if !*fh.Restore {
			c.errorf(fh.RestoreRange, "Invalid value for \"restore\"", "\"restore\" must be true: a fault with restore = false does nothing. Remove the block. %s", usage)
			ok = false
		}
	}
	return f, ok
}

// policyTopology checks the worker kinds and links a policy needs.
func (c *checker) policyTopology(pol *policy, rh *routerHCL, spec *Spec, fh *fileHCL, byName map[string]declared) {
	count := map[Kind]int{KindPrefill: len(fh.Prefill), KindDecode: len(fh.Decode), KindFused: len(fh.Fused)}
	for _, k := range pol.kinds {
		if count[k] == 0 {
			hint := ""
			if pol.name == "kvc" && count[KindFused] > 0 {
				hint = " To score fused workers with KVC's Algorithm 1, use bucket routing with local_router \"kvc\"."
			}
			c.errorf(rh.PolicyRange, fmt.Sprintf("No %s workers", k),
				"The %q policy (%s) needs at least one %s worker: add a %s \"NAME\" { ... } block.%s", pol.name, pol.doc, k, k, hint)
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

	c.replay(wh, &w)
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
		c.generatorKind(gh) // topology/kvcpaper.go
		w.Generator = c.generator(gh)
		c.kvcGenerator(gh, &w.Generator) // topology/kvcpaper.go
	}
	w.ClientCap = checkNum(c, wh.ClientCap, wh.ClientCapRange, 0, "client_cap", "requests the replay client keeps outstanding; 0 = no cap", atLeast(0))
	return w
}

// replay checks the trace replay options of a workload block.
func (c *checker) replay(wh *workloadHCL, w *Workload) {
	type opt struct {
		set  bool
		rng  hcl.Range
		name string
	}
	opts := []opt{
		{wh.SkipBad != nil, wh.SkipBadRange, "skip_bad"},
		{wh.SessionRate != nil, wh.SessionRateRange, "session_rate"},
		{wh.MaxConcurrent != nil, wh.MaxConcurrentRange, "max_concurrent"},
		{wh.SharePrefix != nil, wh.SharePrefixRange, "share_prefix"},
		{wh.InferSessions != nil, wh.InferSessionsRange, "infer_sessions"},
		{wh.TraceTime != nil, wh.TraceTimeRange, "trace_time"},
	}
	if wh.Trace == nil {
		for _, o := range opts {
			if o.set {
				c.errorf(o.rng, "Trace option without trace",
					"%q is a trace replay option; it only applies together with \"trace\".", o.name)
			}
		}
		return
	}
	r := &w.Replay
	if wh.SkipBad != nil {
		r.SkipBad = *wh.SkipBad
	}
	if wh.SharePrefix != nil {
		r.SharePrefix = *wh.SharePrefix
	}
	if wh.InferSessions != nil {
		r.InferSessions = *wh.InferSessions
	}
	if wh.TraceTime != nil {
		r.TraceTime = *wh.TraceTime
	}
	r.SessionRate = checkNum(c, wh.SessionRate, wh.SessionRateRange, 0, "session_rate",
		"Poisson session starts in sessions per second", positive[float64])
	r.MaxConcurrent = checkNum(c, wh.MaxConcurrent, wh.MaxConcurrentRange, 0, "max_concurrent",
		"at most this many sessions overlap", atLeast(1))
	starts := 0
	var last hcl.Range
	for _, o := range []opt{opts[1], opts[2], {r.TraceTime, wh.TraceTimeRange, "trace_time"}} {
		if o.set {
			starts++
			last = o.rng
		}
	}
	if starts > 1 {
		c.errorf(last, "Conflicting session starts",
			"Set at most one of session_rate, max_concurrent and trace_time: each decides when sessions start.")
	}
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

// bodyRange is the source range of a block body (braces included), or the
// zero range when it is not known.
func bodyRange(b hcl.Body) hcl.Range {
	if sb, ok := b.(*hclsyntax.Body); ok {
		return sb.SrcRange
	}
	return hcl.Range{}
}

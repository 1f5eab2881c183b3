package main

import (
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/transfer"
)

// Origins of an effective value in pdemu show.
const (
	originHCL     = "hcl"     // differs from the default: set by the file, a base it extends, --set or --var
	originDefault = "default" // the default value (the file may also spell it out)
	originDerived = "derived" // computed: a pool from GPU memory, a context from the preset, a transport default
)

// showAttr is one attribute of the effective configuration.
type showAttr struct {
	Name   string `json:"name"`
	Value  any    `json:"value"`
	Origin string `json:"origin"`
	Note   string `json:"note,omitempty"`
	hcl    string // the value as an HCL literal
}

// showBlock is one block of it.
type showBlock struct {
	Type   string      `json:"type"`
	Labels []string    `json:"labels,omitempty"`
	Attrs  []showAttr  `json:"attributes"`
	Blocks []showBlock `json:"blocks,omitempty"`
}

func newShowCmd() *cobra.Command {
	var sf scenarioFlags
	var trace string
	var asJSON bool
	c := &cobra.Command{
		Use:   "show SCENARIO",
		Short: "Print the effective configuration of a scenario, every default filled in with its origin",
		Long: `Print the configuration a run of SCENARIO uses, after extends, dynamic
blocks, variables, --set, --router and --trace: every worker, link, the
router, the workload, the SLO and recovery, each attribute with its origin:

  hcl      differs from the default (the file, a base it extends, --set, --var)
  default  the default value (whether or not the file spells it out)
  derived  computed: K_d from GPU memory, max_model_len from the model
           preset, a link's efficiency and max_rate from its transport
           and its effective rate min(efficiency x bandwidth, max_rate)

The HCL form is a scenario on its own (dynamic blocks expanded); --json
prints the blocks with {name, value, origin, note} attributes, like
terraform show -json.`,
		Example: `  pdemu show 1p3d-mlx5
  pdemu show claude-code --set router.rho=0.9 --json
  pdemu show 1p3d-mlx5 --trace ../shared/traces/weka-claude-code`,
		Args:              exactlyOne("show", "SCENARIO"),
		ValidArgsFunction: completeScenarios,
		RunE: func(cmd *cobra.Command, args []string) error {
			sf.trace = trace
			spec, err := sf.load(args[0], cmd.InOrStdin())
			if err != nil {
				return err
			}
			blocks, err := effective(spec)
			if err != nil {
				return badInput(err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, struct {
					Scenario string      `json:"scenario"`
					Blocks   []showBlock `json:"blocks"`
				}{spec.Source, blocks})
			}
			fmt.Fprintf(out, "# pdemu show %s: the effective configuration (origin: hcl | default | derived)\n", args[0])
			if omitted := showOmits(spec); omitted != "" {
				fmt.Fprintf(out, "# not shown: %s ('pdemu scenarios show' prints the file)\n", omitted)
			}
			if spec.Name != "" {
				fmt.Fprintf(out, "name = %q\n", spec.Name)
			}
			for _, b := range blocks {
				fmt.Fprintln(out)
				writeShowBlock(out, b, "")
			}
			return nil
		},
	}
	sf.register(c, "override an HCL attribute: --set PATH=VALUE (repeatable)")
	c.Flags().StringVar(&trace, "trace", "", "show the run with this trace replacing the scenario's workload")
	c.Flags().BoolVar(&asJSON, "json", false, "print the blocks as JSON")
	return c
}

func writeShowBlock(w io.Writer, b showBlock, indent string) {
	fmt.Fprintf(w, "%s%s", indent, b.Type)
	for _, l := range b.Labels {
		fmt.Fprintf(w, " %q", l)
	}
	fmt.Fprintln(w, " {")
	width := 0
	for _, a := range b.Attrs {
		if a.hcl != "" {
			width = max(width, len(a.Name))
		}
	}
	for _, a := range b.Attrs {
		note := a.Origin
		if a.Note != "" {
			note += ": " + a.Note
		}
		if a.hcl == "" { // not an attribute: a comment
			fmt.Fprintf(w, "%s  # %s = %v (%s)\n", indent, a.Name, a.Value, note)
			continue
		}
		fmt.Fprintf(w, "%s  %-*s = %s # %s\n", indent, width, a.Name, a.hcl, note)
	}
	for _, c := range b.Blocks {
		writeShowBlock(w, c, indent+"  ")
	}
	fmt.Fprintf(w, "%s}\n", indent)
}

// attrs builds showAttrs.
type attrs []showAttr

func (a *attrs) add(name string, v any, origin, note string) {
	*a = append(*a, showAttr{Name: name, Value: v, Origin: origin, Note: note, hcl: hclLiteral(v)})
}

// cmp adds v with origin default when it equals def, hcl otherwise.
func (a *attrs) cmp(name string, v, def any) {
	o := originHCL
	if reflect.DeepEqual(v, def) {
		o = originDefault
	}
	a.add(name, v, o, "")
}

// comment adds a figure that is no attribute (HCL comment only).
func (a *attrs) comment(name string, v any, note string) {
	*a = append(*a, showAttr{Name: name, Value: v, Origin: originDerived, Note: note})
}

func hclLiteral(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case time.Duration:
		return strconv.Quote(x.String())
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool, int, uint64:
		return fmt.Sprint(x)
	}
	return fmt.Sprint(v)
}

// bandwidth is a rate in bytes/s as HCL writes it.
func bandwidth(bps float64) string {
	if math.IsInf(bps, 1) {
		return "100Tbps"
	}
	return strconv.FormatFloat(bps*8/1e9, 'g', 6, 64) + "Gbps"
}

// effective is spec as show prints it.
func effective(spec *topology.Spec) ([]showBlock, error) {
	var out []showBlock
	lim, err := cluster.LimitsOf(spec)
	if err != nil {
		return nil, err
	}
	_ = lim
	for _, ws := range []struct {
		kind string
		ws   []topology.Worker
	}{{"prefill", spec.Prefill}, {"decode", spec.Decode}, {"fused", spec.Fused}} {
		for _, w := range ws.ws {
			b, err := workerBlock(ws.kind, w, spec)
			if err != nil {
				return nil, err
			}
			out = append(out, b)
		}
	}
	cfgs, err := cluster.NICConfigs(spec)
	if err != nil {
		return nil, err
	}
	nics, _ := spec.NICs()
	cfgOf := map[int]transfer.Config{}
	for i, n := range nics {
		for _, li := range n.Links {
			cfgOf[li] = cfgs[i]
		}
	}
	for i, l := range spec.Links {
		out = append(out, linkBlock(l, cfgOf[i]))
	}
	out = append(out, routerBlock(spec), workloadBlock(spec), sloBlock(spec.SLO), recoveryBlock(spec.Recovery))
	return out, nil
}

func workerBlock(kind string, w topology.Worker, spec *topology.Spec) (showBlock, error) {
	def := topology.DefaultWorker(w.Name, w.Kind, w.GPU, w.Model)
	var a attrs
	a.add("gpu", w.GPU, originHCL, "")
	a.add("model", w.Model, originHCL, "")
	a.cmp("tp", w.TP, def.TP)
	a.cmp("mem_fraction_static", w.MemFractionStatic, def.MemFractionStatic)
	if w.KVBudgetTokens > 0 {
		a.add("kv_budget_tokens", w.KVBudgetTokens, originHCL, "")
	} else {
		n, err := cluster.PoolTokens(w)
		if err != nil {
			return showBlock{}, err
		}
		a.add("kv_budget_tokens", n, originDerived, fmt.Sprintf("GPU memory: %s x%d at mem_fraction_static %g, less weights and reserved memory", w.GPU, w.TP, w.MemFractionStatic))
	}
	if kind != "prefill" {
		n, _ := cluster.PoolTokens(w)
		a.comment("rho_k_d", cluster.PoolCap(spec, n), fmt.Sprintf("the largest request it holds, floor(rho %g x K_d)", spec.Router.Rho))
	}
	if w.MaxModelLen > 0 {
		a.add("max_model_len", w.MaxModelLen, originHCL, "")
	} else {
		m, err := gpu.LookupModel(w.Model)
		if err != nil {
			return showBlock{}, err
		}
		a.add("max_model_len", m.MaxModelLen, originDerived, "the model preset's max_position_embeddings")
	}
	a.cmp("max_batch_tokens", w.MaxBatchTokens, def.MaxBatchTokens)
	if kind != "prefill" {
		a.cmp("max_running", w.MaxRunning, def.MaxRunning)
	}
	if kind == "fused" {
		a.cmp("dram_cache_tokens", w.DRAMCacheTokens, 0)
	}
	p, err := cluster.PerfFor(w)
	if err != nil {
		return showBlock{}, err
	}
	o := w.Perf
	perf := func(name string, set bool, v any) {
		if set {
			a.add(name, v, originHCL, "")
		} else {
			a.add(name, v, originDefault, "the cost model's (docs/MODEL.md §1)")
		}
	}
	perf("mfu", o.MFU != nil, p.MFU)
	perf("mbu", o.MBU != nil, p.MBU)
	perf("comm_efficiency", o.CommEfficiency != nil, p.CommEfficiency)
	perf("step_overhead", o.StepOverhead != nil, p.StepOverhead)
	perf("prefill_overhead", o.PrefillOverhead != nil, p.PrefillOverhead)
	perf("allreduce_latency", o.AllReduceLatency != nil, p.AllReduceLatency)
	return showBlock{Type: kind, Labels: []string{w.Name}, Attrs: a}, nil
}

func linkBlock(l topology.Link, cfg transfer.Config) showBlock {
	var a attrs
	a.add("transport", string(l.Transport), originHCL, "")
	a.add("device", l.Device, originHCL, "")
	a.add("bandwidth", bandwidth(l.Bandwidth), originHCL, "")
	a.cmp("latency", l.Latency, topology.DefaultLatency)
	uncapped := cfg
	uncapped.MaxRate = math.Inf(1)
	eff := 0.0
	if cfg.LineRate > 0 {
		eff = uncapped.EffectiveRate() / cfg.LineRate
	}
	if l.Efficiency > 0 {
		a.add("efficiency", l.Efficiency, originHCL, "")
	} else {
		a.add("efficiency", math.Round(eff*1e6)/1e6, originDerived, string(l.Transport)+"'s default")
	}
	if l.MaxRate > 0 {
		a.add("max_rate", bandwidth(l.MaxRate), originHCL, "")
	} else {
		a.add("max_rate", bandwidth(transfer.DefaultMaxRate(cfg.Transport)), originDerived, string(l.Transport)+"'s default (the host path's ceiling)")
	}
	rate := cfg.EffectiveRate()
	note := "min(efficiency x bandwidth, max_rate)"
	if uncapped.EffectiveRate() > rate {
		note += "; max_rate binds: a larger bandwidth changes nothing"
	}
	a.comment("effective_rate", fmt.Sprintf("%.2f GB/s", rate/1e9), note)
	return showBlock{Type: "link", Labels: []string{l.From, l.To}, Attrs: a}
}

func routerBlock(spec *topology.Spec) showBlock {
	r := spec.Router
	def := topology.DefaultRouter(r.Policy)
	var a attrs
	rv, dv := reflect.ValueOf(r), reflect.ValueOf(def)
	for _, p := range topology.PolicyParams(r.Policy) {
		key := strings.ReplaceAll(p, "_", "")
		for i := 0; i < rv.NumField(); i++ {
			if strings.EqualFold(rv.Type().Field(i).Name, key) {
				v := rv.Field(i).Interface()
				if p == "epsilon" && topology.EpsilonDefaultsToD(r.Policy) && len(spec.Decode) > 0 {
					if v == len(spec.Decode) {
						a.add(p, v, originDerived, "|D|, the spec's default when the block does not set it")
					} else {
						a.add(p, v, originHCL, fmt.Sprintf("the default would be |D| = %d", len(spec.Decode)))
					}
					break
				}
				a.cmp(p, v, dv.Field(i).Interface())
				break
			}
		}
	}
	b := showBlock{Type: "router", Labels: []string{r.Policy}, Attrs: a}
	if len(spec.Buckets) > 0 && r.Policy == topology.PolicyBuckets {
		b.Attrs = append(b.Attrs, showAttr{Name: "buckets", Value: len(spec.Buckets), Origin: originHCL, Note: "bucket routing: global_router " + spec.GlobalRouter.Policy + ", local_router " + spec.LocalRouter.Policy})
	}
	return b
}

// workloadBlock lists the workload and generator attributes one a.cmp
// line each (name, field, default): parallel lines on purpose, each
// type-checked, where a reflection table would not be.
func workloadBlock(spec *topology.Spec) showBlock {
	wl := spec.Workload
	def := topology.DefaultWorkload()
	var a attrs
	a.cmp("clock", wl.Clock, def.Clock)
	a.cmp("time_scale", wl.TimeScale, def.TimeScale)
	a.cmp("seed", wl.Seed, def.Seed)
	a.cmp("loop", wl.Loop, def.Loop)
	a.cmp("max_requests", wl.MaxRequests, def.MaxRequests)
	a.cmp("sample_interval", wl.SampleInterval, def.SampleInterval)
	a.cmp("client_cap", wl.ClientCap, 0)
	b := showBlock{Type: "workload"}
	if wl.Trace != "" {
		a.add("trace", wl.Trace, originHCL, "")
		if wl.Format != "" {
			a.add("format", wl.Format, originHCL, "")
		} else {
			a.comment("format", "detected", "from the trace's contents")
		}
		r := wl.Replay
		a.cmp("share_prefix", r.SharePrefix, false)
		a.cmp("skip_bad", r.SkipBad, false)
		if r.MaxConcurrent > 0 {
			a.add("max_concurrent", r.MaxConcurrent, originHCL, "")
		}
		if r.SessionRate > 0 {
			a.add("session_rate", r.SessionRate, originHCL, "")
		}
		if r.TraceTime {
			a.add("trace_time", true, originHCL, "")
		}
		if r.InferSessions {
			a.add("infer_sessions", true, originHCL, "")
		}
	} else {
		g, dg := wl.Generator, topology.DefaultGenerator()
		var ga attrs
		ga.cmp("sessions", g.Sessions, dg.Sessions)
		ga.cmp("turns", g.Turns, dg.Turns)
		ga.cmp("system_tokens", g.SystemTokens, dg.SystemTokens)
		ga.cmp("first_tokens", g.FirstTokens, dg.FirstTokens)
		ga.cmp("append_tokens", g.AppendTokens, dg.AppendTokens)
		ga.cmp("output_tokens", g.OutputTokens, dg.OutputTokens)
		ga.cmp("think_time", g.ThinkTime, dg.ThinkTime)
		ga.cmp("session_stagger", g.SessionStagger, dg.SessionStagger)
		ga.cmp("block_tokens", g.BlockTokens, dg.BlockTokens)
		b.Blocks = []showBlock{{Type: "generator", Labels: []string{"agentic"}, Attrs: ga}}
	}
	b.Attrs = a
	return b
}

func sloBlock(s topology.SLO) showBlock {
	d := topology.DefaultSLO()
	var a attrs
	a.cmp("ttft", s.TTFT, d.TTFT)
	a.cmp("tpot", s.TPOT, d.TPOT)
	a.cmp("e2e", s.E2E, d.E2E)
	a.cmp("attainment", s.Attainment, d.Attainment)
	return showBlock{Type: "slo", Attrs: a}
}

func recoveryBlock(r topology.Recovery) showBlock {
	d := topology.DefaultRecovery()
	var a attrs
	a.cmp("detection_delay", r.DetectionDelay, d.DetectionDelay)
	a.cmp("retry_budget", r.RetryBudget, d.RetryBudget)
	return showBlock{Type: "recovery", Attrs: a}
}

// showOmits names what the HCL form leaves out, so that a reader does
// not take it for the whole scenario.
func showOmits(spec *topology.Spec) string {
	var out []string
	faults := spec.Chaos != nil
	for _, ws := range [][]topology.Worker{spec.Prefill, spec.Decode, spec.Fused} {
		for _, w := range ws {
			faults = faults || len(w.Faults) > 0
		}
	}
	for _, l := range spec.Links {
		faults = faults || len(l.Faults) > 0
	}
	if faults {
		out = append(out, "faults (crash, slow, fault and chaos blocks)")
	}
	if spec.Router.Policy == topology.PolicyBuckets {
		out = append(out, "the bucket, global_router and local_router blocks")
	}
	return strings.Join(out, "; ")
}

package main

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
	"path/filepath"
	"strings"

	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/compare"
	"github.com/pdemu/pdemu/output"
	"github.com/pdemu/pdemu/report"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/workload"
)

// fitCheck is what the preflight learns by reading a run's whole workload
// before the run: how many requests the cluster cannot serve, and why.
// The run enforces the same two rules (cluster.Limits), so these counts
// are the failures the run will have for those reasons.
type fitCheck struct {
	Requests    int
	Longest     int // prompt + output tokens of the longest request
	OverContext int // longer than Limits.Context: will fail exceeds-context
	OverPool    int // within the context, larger than every pool: exceeds-kv-pool
	Limits      cluster.Limits
	// Derived is Limits.Pool with kv_budget_tokens derived from GPU
	// memory, when some pool worker sets kv_budget_tokens (else 0).
	Derived  int
	PoolKind string // "decode" or "fused"
	// Glob, when set, replaces the worker kind in the --set paths of the
	// fixes: compare's --set applies to every scenario, so "*" works on
	// P/D and fused ones alike.
	Glob string
}

// Failing is the number of requests that will fail for their length.
func (f *fitCheck) Failing() int { return f.OverContext + f.OverPool }

// checkFit reads src to the end (at most spec's max_requests) and counts
// the requests against spec's limits. A trace error (a bad record) is
// returned as it would stop the run.
func checkFit(spec *topology.Spec, src workload.Source) (*fitCheck, error) {
	lim, err := cluster.LimitsOf(spec)
	if err != nil {
		return nil, err
	}
	f := &fitCheck{Limits: lim, PoolKind: "decode"}
	pool := spec.Decode
	if len(spec.Fused) > 0 {
		f.PoolKind, pool = "fused", spec.Fused
	}
	for _, w := range pool {
		if w.KVBudgetTokens > 0 {
			w.KVBudgetTokens = 0
			n, err := cluster.PoolTokens(w)
			if err == nil {
				f.Derived = max(f.Derived, cluster.PoolCap(spec, n))
			}
		}
	}
	limit := spec.Workload.MaxRequests
	for limit == 0 || f.Requests < limit {
		r, err := src.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		f.Requests++
		n := r.InputLen + r.OutputLen
		f.Longest = max(f.Longest, n)
		switch {
		case lim.Context > 0 && n > lim.Context:
			f.OverContext++
		case lim.Pool > 0 && n > lim.Pool:
			f.OverPool++
		}
	}
	return f, nil
}

// pow2Above is the smallest power of two >= n (n > 0).
func pow2Above(n int) int {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(n-1))
}

// problem describes the requests that will fail and the flags that fix
// it ("" when every request fits). name is the run or scenario.
func (f *fitCheck) problem(name string) string {
	if f.Failing() == 0 {
		return ""
	}
	var b strings.Builder
	share := float64(f.Failing()) / float64(max(f.Requests, 1))
	if name != "" {
		b.WriteString(name + ": ")
	}
	fmt.Fprintf(&b, "%d of %d requests (%.1f%%) cannot be served by this cluster (longest %d tokens, prompt + output):",
		f.Failing(), f.Requests, 100*share, f.Longest)
	if f.OverContext > 0 {
		fmt.Fprintf(&b, "\n  %d exceed the context, max_model_len = %d (worker %s; the model preset's unless the scenario sets it) and will fail exceeds-context;"+
			" if the deployment serves a longer context (e.g. Qwen3-Coder: 1M tokens with YaRN), state it: --set '*.*.max_model_len=%d'",
			f.OverContext, f.Limits.Context, f.Limits.ContextBy, pow2Above(f.Longest))
	}
	kind := f.PoolKind
	if f.Glob != "" {
		kind = f.Glob
	}
	if f.OverPool > 0 {
		fmt.Fprintf(&b, "\n  %d fit the context but no %s worker's KV pool (largest ρ·K_d %d tokens) and will fail exceeds-kv-pool;", f.OverPool, f.PoolKind, f.Limits.Pool)
		switch {
		case f.Derived > f.Limits.Pool:
			fmt.Fprintf(&b, " derive K_d from GPU memory (ρ·K_d %d tokens): --set '%s.*.kv_budget_tokens=0'", f.Derived, kind)
		default:
			fmt.Fprintf(&b, " give each %s worker more memory: a larger GPU (--set '%s.*.gpu=B200'; 'pdemu gpus') or more of them (--set '%s.*.tp=2')", f.PoolKind, kind, kind)
		}
	}
	return b.String()
}

// fitError is the preflight's verdict on f: an error (exit 2, nothing has
// run) when more than maxFailed of the requests cannot be served, since
// the run would exceed --max-failed for that alone; else the problem as a
// warning ("" when none).
func (f *fitCheck) verdict(name string, maxFailed float64) (warning string, err error) {
	p := f.problem(name)
	if p == "" {
		return "", nil
	}
	if maxFailed >= 0 && float64(f.Failing()) > maxFailed*float64(f.Requests) {
		return "", usageErr("%s\n  (checked before the run; --max-failed %g allows at most %.1f%% failed; --max-failed 1 runs it anyway)", p, maxFailed, 100*maxFailed)
	}
	return "pdemu: warning: " + p, nil
}

// preflight opens spec's workload, reads it through checkFit and closes
// it: a missing trace or a bad record fails here, before anything runs.
func preflight(spec *topology.Spec, skipBad, traceOverridden bool) (*fitCheck, error) {
	src, err := openSource(spec, skipBad, traceOverridden)
	if err != nil {
		return nil, err
	}
	defer closeSource(src)
	f, err := checkFit(spec, src)
	if err != nil {
		return nil, badInput(err)
	}
	return f, nil
}

// seeded reports whether spec's workload draws from its seed, so that
// runs with different seeds differ: the generator, Poisson session starts
// (session_rate), and a pool's local routers (seeded from the workload
// seed). A trace replayed as recorded (or with max_concurrent staggering)
// is the same for every seed: only its synthesized hash values change.
func seeded(spec *topology.Spec) bool {
	wl := spec.Workload
	return wl.Trace == "" || wl.Replay.SessionRate > 0 || len(spec.Buckets) > 0
}

// checkBeforeRun is compare's preflight of one run, called while every
// run is loaded and before any starts: its run directory is usable
// (another run's outputs need --force; only for the runs this process
// writes: writes is false for another shard's), its workload opens and fits, and
// --seeds on a workload that does not draw from its seed is flagged once
// per scenario.
func checkBeforeRun(spec *topology.Spec, p report.Params, f *compareFlags, traceSet, writes bool, stderr io.Writer) error {
	if writes {
		if err := output.CheckDir(compare.RunDir(f.out, p.Name), f.force); err != nil {
			return err
		}
	}
	fc, err := preflight(spec, f.skipBad, traceSet)
	if err != nil {
		return err
	}
	fc.Glob = "*"
	w, err := fc.verdict("", f.maxFailed) // the LoadError names the run
	if err != nil {
		return err
	}
	if w != "" {
		fmt.Fprintln(stderr, w)
	}
	if f.seeds > 1 && !seeded(spec) && p.Seed != nil && *p.Seed == 1 {
		fmt.Fprintf(stderr, "pdemu: warning: run %s: --seeds %d: its workload (a trace replayed as recorded) draws nothing from the seed, so its %d seeds give identical runs; vary the load instead (--set workload.session_rate=R draws Poisson session starts from the seed)\n",
			p.Name, f.seeds, f.seeds)
	}
	return nil
}

// scenarioLabel is a scenario argument without its directory and .hcl.
func scenarioLabel(s string) string {
	return strings.TrimSuffix(filepath.Base(s), ".hcl")
}

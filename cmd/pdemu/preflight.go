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

// Up to replayMax requests (and replayBytes of them, estimated), the
// preflight of `pdemu run` keeps what it read and the run takes the same
// requests back (preflightKeep): the trace is parsed once, not twice (the
// second parse was ~4 % of a Mooncake run). A longer workload is read
// again, as it always was, so that a large trace is never held whole.
var (
	replayMax   = 1 << 16
	replayBytes = 16 << 20
)

// keeper passes a source's requests through and keeps them while they are
// few enough; over the bounds it drops them (full).
type keeper struct {
	workload.Source
	reqs  []*workload.Request
	bytes int
	full  bool
}

func (k *keeper) Next() (*workload.Request, error) {
	r, err := k.Source.Next()
	if err != nil || k.full {
		return r, err
	}
	k.bytes += 256 + 8*len(r.Blocks) // a Request and its blocks, roughly
	if len(k.reqs) >= replayMax || k.bytes > replayBytes {
		k.full, k.reqs = true, nil
		if lo, ok := k.Source.(interface{ LengthsOnly() }); ok {
			lo.LengthsOnly() // the rest of the pass reads lengths only (workload.Agentic)
		}
		return r, nil
	}
	k.reqs = append(k.reqs, r)
	return r, nil
}

// replay hands out the kept requests, then whatever the source still has
// (nothing after EOF; past max_requests, what a fresh source would give).
// Close, Warnings, Skipped, Digest and ClientCap are the source's.
type replay struct {
	src  workload.Source
	reqs []*workload.Request
}

func (r *replay) Close() error {
	if c, ok := r.src.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

func (r *replay) Warnings() []string {
	if w, ok := r.src.(workload.Warner); ok {
		return w.Warnings()
	}
	return nil
}

func (r *replay) Skipped() int {
	if s, ok := r.src.(workload.Skipper); ok {
		return s.Skipped()
	}
	return 0
}

func (r *replay) Digest() (string, bool) {
	if d, ok := r.src.(workload.Digester); ok {
		return d.Digest()
	}
	return "", false
}

func (r *replay) ClientCap() int {
	if c, ok := r.src.(workload.ClientCapper); ok {
		return c.ClientCap()
	}
	return 0
}

func (r *replay) Next() (*workload.Request, error) {
	if len(r.reqs) == 0 {
		return r.src.Next()
	}
	q := r.reqs[0]
	r.reqs[0] = nil // the run holds only what is in flight
	r.reqs = r.reqs[1:]
	return q, nil
}

// preflightKeep is preflight for a run that reads the workload next: when
// it was small enough, the returned source replays it (still open: the
// caller closes it); otherwise the source is nil and the run opens the
// workload again.
func preflightKeep(spec *topology.Spec, skipBad, traceOverridden bool) (*fitCheck, workload.Source, error) {
	src, err := openSource(spec, skipBad, traceOverridden)
	if err != nil {
		return nil, nil, err
	}
	k := &keeper{Source: src}
	f, err := checkFit(spec, k)
	if err != nil || k.full {
		closeSource(src)
		if err != nil {
			return nil, nil, badInput(err)
		}
		return f, nil, nil
	}
	return f, &replay{src: src, reqs: k.reqs}, nil
}

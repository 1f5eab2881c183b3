package cluster

import (
	"fmt"
	"math"
	"time"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/topology"
)

// Limits are the largest request a cluster can serve, as the run enforces
// them: a request whose prompt + output tokens exceed Context fails at
// once with gpu.ReasonExceedsContext (vLLM refuses it before scheduling);
// one that exceeds Pool (and not Context) fails with
// gpu.ReasonExceedsPool. Both are known before a run, so a trace can be
// checked against them (cmd/pdemu's preflight).
type Limits struct {
	// Context is the smallest max_model_len of the cluster's workers (a
	// request is served by a prefill and a decode worker, or one fused
	// worker, all of one model); 0 = not checked.
	Context int
	// ContextBy names the worker that sets Context.
	ContextBy string
	// Pool is the largest request (tokens) the workers that hold a
	// request's KV to the end (decode workers, or fused workers) can ever
	// hold: ρ·K_d, rounded down, as gpu.DecodeWorker.Cap.
	Pool int
}

// PoolCap is the largest request a worker with a KV pool of budget
// tokens admits under spec's router (ρ·budget, rounded down, as the
// worker computes it).
func PoolCap(spec *topology.Spec, budget int) int {
	return int(math.Floor(spec.Router.Rho * float64(budget)))
}

// MaxModelLen is worker w's context length: its max_model_len, or the
// model preset's when 0.
func MaxModelLen(w topology.Worker) (int, error) {
	if w.MaxModelLen > 0 {
		return w.MaxModelLen, nil
	}
	m, err := gpu.LookupModel(w.Model)
	if err != nil {
		return 0, fmt.Errorf("worker %s: %w", w.Name, err)
	}
	return m.MaxModelLen, nil
}

// PoolTokens is worker w's KV pool in tokens: kv_budget_tokens, or the
// pool derived from GPU memory (SGLang's rule) when 0.
func PoolTokens(w topology.Worker) (int, error) {
	_, n, err := perfAndBudget(w)
	return n, err
}

// LimitsOf computes spec's Limits.
func LimitsOf(spec *topology.Spec) (Limits, error) {
	var l Limits
	all := [][]topology.Worker{spec.Prefill, spec.Decode, spec.Fused}
	for _, ws := range all {
		for _, w := range ws {
			n, err := MaxModelLen(w)
			if err != nil {
				return l, err
			}
			if n > 0 && (l.Context == 0 || n < l.Context) {
				l.Context, l.ContextBy = n, w.Name
			}
		}
	}
	for _, ws := range all[1:] {
		for _, w := range ws {
			n, err := PoolTokens(w)
			if err != nil {
				return l, err
			}
			l.Pool = max(l.Pool, PoolCap(spec, n))
		}
	}
	return l, nil
}

// exceedsContext reports whether a request of input + output tokens is
// longer than a context limit (0 = none).
func exceedsContext(limit, input, output int) bool {
	return limit > 0 && input+output > limit
}

// failTooLong ends msg's job at once when msg is a NewJob longer than the
// context limit (0: none), failed with gpu.ReasonExceedsContext, as vLLM
// refuses it before any work; it reports whether it did. The node that
// receives NewJob (router or global router) calls it on every message,
// right after its fault half.
func failTooLong(o *outbox, collector Addr, limit int, msg any, now time.Duration) bool {
	m, ok := msg.(NewJob)
	if !ok || !exceedsContext(limit, m.Job.Req.InputLen, m.Job.Req.OutputLen) {
		return false
	}
	j := m.Job
	j.Failed, j.Done = gpu.ReasonExceedsContext, now
	o.send(collector, JobEnded{j}, 0)
	return true
}

// enforceLimits hands spec's context limit to the node that receives
// NewJob (the router of a P/D cluster, the global router of a pool).
func (c *Cluster) enforceLimits(spec *topology.Spec) error {
	l, err := LimitsOf(spec)
	if err != nil {
		return err
	}
	switch n := c.Nodes[c.driver.router].(type) {
	case *routerNode:
		n.ctx = l.Context
	case *globalNode:
		n.ctx = l.Context
	}
	return nil
}

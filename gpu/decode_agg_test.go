package gpu

import (
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/pdemu/pdemu/policy"
	"github.com/pdemu/pdemu/workload"
)

// refContext and refMinRemaining are the decode worker's batch aggregates
// as it computed them before issue 24, by a pass over the running batch on
// every use: the reference the incremental ones must equal.
func refContext(w *DecodeWorker) int64 {
	var ctx int64
	for _, j := range w.running {
		ctx += int64(j.Req.InputLen+j.Req.OutputLen) - int64(j.remaining)
	}
	return ctx
}

func refMinRemaining(w *DecodeWorker) float64 {
	m := math.Inf(1)
	for _, j := range w.running {
		m = min(m, j.remaining)
	}
	return m
}

// opaqueCost hides a Perf's type: the worker cannot know it is pure and
// asks it every time.
type opaqueCost struct{ p Perf }

func (c opaqueCost) PrefillTime(n, cached int) time.Duration { return c.p.PrefillTime(n, cached) }
func (c opaqueCost) DecodeStepTime(b int, ctx int64) time.Duration {
	return c.p.DecodeStepTime(b, ctx)
}
func (c opaqueCost) StepTime(b Pass) time.Duration { return c.p.StepTime(b) }

// TestDecodeAggregatesIncremental: whatever the sequence of admissions,
// arrivals, admission-free runs, aborts and advances, every use of the
// running batch's kept context and smallest remaining sees exactly what a
// pass over the batch computes, the kept step time is the cost model's,
// and a worker whose Perf is hidden behind an interface (no kept step
// time) produces the same events at the same times.
func TestDecodeAggregatesIncremental(t *testing.T) {
	p := mustPerf(t, "qwen3-coder-30b-a3b", "H200-SXM", 1)
	// aggCheck is package state: this test must not run in parallel with
	// another that drives decode workers (none in this package does).
	var checks atomic.Int64
	aggCheck = func(w *DecodeWorker) {
		checks.Add(1)
		if got, want := w.ctx, refContext(w); got != want {
			panic(fmt.Sprintf("kept context %d, recomputed %d", got, want))
		}
		if got, want := w.minRem, refMinRemaining(w); got != want {
			panic(fmt.Sprintf("kept min remaining %v, recomputed %v", got, want))
		}
	}
	defer func() { aggCheck = nil }()
	blockedSeen := 0
	rapid.Check(t, func(t *rapid.T) {
		cfg := DecodeConfig{Name: "d", Budget: rapid.IntRange(2000, 60000).Draw(t, "budget"), Rho: 1,
			TauAppend: rapid.IntRange(0, 3000).Draw(t, "tau"), ReserveOutput: rapid.Bool().Draw(t, "reserve"),
			MaxRunning: rapid.IntRange(1, 8).Draw(t, "maxRunning"), ChunkTokens: rapid.IntRange(64, 4096).Draw(t, "chunk"),
			IdleEvictAfter: time.Duration(rapid.IntRange(1, 50).Draw(t, "idleMs")) * time.Millisecond}
		ws := make([]*DecodeWorker, 2)
		for i, c := range []Cost{p, opaqueCost{p}} {
			w, err := NewDecodeWorker(cfg, c)
			if err != nil {
				t.Fatal(err)
			}
			ws[i] = w
		}
		if ws[0].perf == nil || ws[1].perf != nil {
			t.Fatal("a Perf cost is kept, an opaque one is not")
		}
		type pend struct{ j [2]*Job }
		var arriving []pend
		turn := map[int32]int{}
		now := time.Duration(0)
		var id int64
		for range rapid.IntRange(1, 80).Draw(t, "ops") {
			now += time.Duration(rapid.IntRange(0, 40).Draw(t, "dtMs")) * time.Millisecond
			switch op := rapid.IntRange(0, 5).Draw(t, "op"); op {
			case 0, 1, 5: // a request: admitted (KV arrives later if Seed/Reseed; a rejected one as Fallback), run admission-free, or Vanilla
				s := rapid.Int32Range(0, 5).Draw(t, "session")
				in := rapid.IntRange(1, 3000).Draw(t, "in")
				r := &workload.Request{ID: id, Session: s, Turn: turn[s], InputLen: in,
					OutputLen: rapid.IntRange(1, 300).Draw(t, "out"), BlockTokens: 16,
					Blocks: blocks(s, in/16), AppendLen: in, Last: rapid.IntRange(0, 5).Draw(t, "last") == 0}
				id++
				turn[s]++
				var js [2]*Job
				for i, w := range ws {
					js[i] = &Job{Req: r}
					if op == 1 {
						w.Run(now, js[i])
						continue
					}
					if op == 5 {
						js[i].Mode = policy.ModeVanilla
						w.Arrive(now, js[i])
						continue
					}
					m, _ := w.Admit(now, js[i])
					if m == policy.ModeNone {
						js[i].Mode = policy.ModeFallback
					}
					if m == policy.ModeSeed || m == policy.ModeReseed || m == policy.ModeNone {
						if i == 0 {
							arriving = append(arriving, pend{})
						}
						arriving[len(arriving)-1].j[i] = js[i]
					}
				}
			case 2: // the KV of an admitted request arrives
				if len(arriving) == 0 {
					continue
				}
				k := rapid.IntRange(0, len(arriving)-1).Draw(t, "arrival")
				for i, w := range ws {
					w.Arrive(now, arriving[k].j[i])
				}
				arriving = append(arriving[:k], arriving[k+1:]...)
			case 3: // a client goes away
				if id == 0 {
					continue
				}
				victim := rapid.Int64Range(0, id-1).Draw(t, "abort")
				for _, w := range ws {
					w.Abort(now, victim)
				}
			case 4:
				for _, w := range ws {
					w.Advance(now)
				}
			}
			for _, w := range ws {
				if w.aggOK {
					aggCheck(w)
				}
				if got, want := w.readyGo, refReadyGo(w); got != want {
					t.Fatalf("at %v: %d ready jobs kept as needing no room, %d on the queue", now, got, want)
				}
				if w.readyGo == 0 && len(w.ready) > 0 {
					blockedSeen++
				}
				if w.perf != nil && w.stepOK {
					if want := p.DecodeStepTime(w.stepN, w.stepCtx); w.stepT != want {
						t.Fatalf("kept step time %v for batch %d context %d, the cost model says %v", w.stepT, w.stepN, w.stepCtx, want)
					}
				}
			}
			a, b := ws[0].Ready(), ws[1].Ready()
			if a.HasWake != b.HasWake || a.Wake != b.Wake || len(a.Out) != len(b.Out) {
				t.Fatalf("at %v: kept step time gives wake %v/%v and %d events, asking every time %v/%v and %d",
					now, a.Wake, a.HasWake, len(a.Out), b.Wake, b.HasWake, len(b.Out))
			}
			for i := range a.Out {
				ea, eb := a.Out[i], b.Out[i]
				if ea.Kind != eb.Kind || ea.At != eb.At || ea.Session != eb.Session || (ea.Job == nil) != (eb.Job == nil) ||
					ea.Job != nil && (ea.Job.Req.ID != eb.Job.Req.ID || ea.Job.Done != eb.Job.Done || ea.Job.FirstToken != eb.Job.FirstToken) {
					t.Fatalf("at %v event %d differs: %+v vs %+v", now, i, ea, eb)
				}
			}
		}
	})
	if checks.Load() == 0 {
		t.Fatal("no kept aggregate was ever used: the test checks nothing")
	}
	if blockedSeen == 0 {
		t.Fatal("no job ever waited for room on the ready queue: drainReady's early stop is not exercised")
	}
	t.Logf("%d uses of kept aggregates compared with a recomputation", checks.Load())
}

// refReadyGo counts the jobs on w's ready queue that need no room.
func refReadyGo(w *DecodeWorker) int {
	n := 0
	for _, j := range w.ready {
		if j.footprint <= 0 || j.reserved {
			n++
		}
	}
	return n
}

// TestSharedPrefix: the same-array shortcut gives what comparing the
// elements gives, for slices of one array and for copies.
func TestSharedPrefix(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		base := rapid.SliceOfN(rapid.Uint64Range(0, 3), 0, 40).Draw(t, "base")
		i := rapid.IntRange(0, len(base)).Draw(t, "i")
		j := rapid.IntRange(0, len(base)).Draw(t, "j")
		a, b := base[:i], base[:j]
		if rapid.Bool().Draw(t, "copy") {
			b = append([]uint64(nil), b...)
			if len(b) > 0 && rapid.Bool().Draw(t, "change") {
				b[rapid.IntRange(0, len(b)-1).Draw(t, "at")]++
			}
		}
		want := 0
		for want < len(a) && want < len(b) && a[want] == b[want] {
			want++
		}
		if got := sharedPrefix(a, b); got != want {
			t.Fatalf("sharedPrefix = %d, element by element %d", got, want)
		}
	})
}

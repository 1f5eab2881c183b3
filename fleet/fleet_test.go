package fleet_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/fleet"
	"github.com/pdemu/pdemu/internal/testkit"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/workload"
)

// spec is 1p3d-mlx5, the fleet the tests drive.
func spec(t testing.TB) *topology.Spec { return specNamed(t, "1p3d-mlx5") }

// req is a prompt of n blocks: the first shared blocks come from the
// system prompt (shared by all sessions), the rest are the session's.
func req(id int64, session int32, turn, blocks, shared int) *workload.Request {
	bs := make([]uint64, blocks)
	for i := range bs {
		if i < shared {
			bs[i] = uint64(1000 + i)
		} else {
			bs[i] = uint64(session)<<32 | uint64(i)
		}
	}
	return &workload.Request{ID: id, Session: session, SessionName: fmt.Sprint("s", session), Turn: turn,
		InputLen: blocks*24 + 5, OutputLen: 8, Blocks: bs, BlockTokens: 24}
}

// remotePrefill is the call of r on p0 as the prefill of a remote
// decode: one output token, as vLLM's do_remote_decode asks.
func remotePrefill(r *workload.Request) fleet.Call {
	r.OutputLen = 1
	return fleet.Call{Worker: "p0", Req: r, RemoteDecode: true}
}

// replay applies every OutKV to per-worker sets, as a subscriber would.
type replay map[string]map[uint64]bool

func (r replay) apply(outs []fleet.Out) {
	for _, o := range outs {
		if o.Kind != fleet.OutKV {
			continue
		}
		set := r[o.Worker]
		if set == nil {
			set = map[uint64]bool{}
			r[o.Worker] = set
		}
		for _, b := range o.Stored {
			set[b] = true
		}
		for _, b := range o.Removed {
			delete(set, b)
		}
	}
}

func (r replay) blocks(w string) []uint64 {
	var out []uint64
	for b := range r[w] {
		out = append(out, b)
	}
	slices.Sort(out)
	return out
}

// run advances f until nothing is pending, collecting outs.
func run(f *fleet.Fleet, outs *[]fleet.Out) {
	for {
		t, ok := f.NextEvent()
		if !ok {
			break
		}
		f.Advance(t)
		*outs = append(*outs, f.Take()...)
	}
	*outs = append(*outs, f.Take()...)
}

func ends(outs []fleet.Out) map[int64]fleet.Out {
	m := map[int64]fleet.Out{}
	for _, o := range outs {
		if o.Kind == fleet.OutDone || o.Kind == fleet.OutFailed {
			m[o.Job.Req.ID] = o
		}
	}
	return m
}

func TestHandoff(t *testing.T) {
	f, err := fleet.New(spec(t), fleet.Options{})
	require.NoError(t, err)
	var outs []fleet.Out
	// prefill runs remotePrefill(r) at at and returns its end.
	prefill := func(at time.Duration, r *workload.Request) fleet.Out {
		require.NoError(t, f.Submit(at, remotePrefill(r)))
		run(f, &outs)
		return ends(outs)[r.ID]
	}
	e := prefill(0, req(0, 1, 0, 40, 10))
	require.Equal(t, fleet.OutDone, e.Kind)
	require.NotNil(t, e.Handoff)
	assert.Equal(t, "p0", e.Handoff.Engine)
	assert.Equal(t, 1, f.Holds())

	// The decode call with the hand-off pulls the KV over p1's NIC.
	d := req(1, 1, 0, 40, 10)
	h := *e.Handoff
	now := f.Now() + time.Millisecond
	require.NoError(t, f.Submit(now, fleet.Call{Worker: "d1", Req: d, Pull: &h}))
	run(f, &outs)
	de := ends(outs)[1]
	require.Equal(t, fleet.OutDone, de.Kind, de.Job.Failed)
	assert.Equal(t, "Seed", de.Job.Mode.String())
	assert.Positive(t, de.Job.TransferBytes)
	assert.Greater(t, de.Job.TransferEnd, de.Job.TransferStart)
	assert.Zero(t, f.Holds())
	var moved int64
	for _, l := range f.Links() {
		moved += l.Bytes
	}
	assert.Equal(t, de.Job.TransferBytes, moved)

	// The same hand-off again is stale: it was read.
	d2 := req(2, 1, 0, 40, 10)
	require.NoError(t, f.Submit(f.Now(), fleet.Call{Worker: "d2", Req: d2, Pull: &h}))
	run(f, &outs)
	assert.Equal(t, fleet.ReasonUnknownRequest, ends(outs)[2].Job.Failed)

	// A wrong engine and another prompt's KV fail too.
	h3 := *prefill(f.Now(), req(3, 2, 0, 20, 10)).Handoff
	bad := h3
	bad.Engine = "p9"
	require.NoError(t, f.Submit(f.Now(), fleet.Call{Worker: "d1", Req: req(4, 2, 0, 20, 10), Pull: &bad}))
	require.NoError(t, f.Submit(f.Now(), fleet.Call{Worker: "d1", Req: req(5, 3, 0, 20, 10), Pull: &h3}))
	run(f, &outs)
	assert.Equal(t, fleet.ReasonUnknownEngine, ends(outs)[4].Job.Failed)
	assert.Equal(t, fleet.ReasonMismatch, ends(outs)[5].Job.Failed)

	// Expired: the hold outlives the abort timeout.
	h6 := *prefill(f.Now(), req(6, 4, 0, 20, 10)).Handoff
	require.NoError(t, f.Submit(f.Now()+fleet.DefaultHoldTimeout+time.Second, fleet.Call{Worker: "d0", Req: req(7, 4, 0, 20, 10), Pull: &h6}))
	run(f, &outs)
	assert.Equal(t, fleet.ReasonExpired, ends(outs)[7].Job.Failed)

	checkResidency(t, f, outs)
}

func checkResidency(t *testing.T, f *fleet.Fleet, outs []fleet.Out) {
	t.Helper()
	r := replay{}
	r.apply(outs)
	for _, w := range f.Workers() {
		if w.State == fleet.StateGone {
			assert.Empty(t, r.blocks(w.Name), w.Name)
			continue
		}
		assert.ElementsMatch(t, f.Residency(w.Name), r.blocks(w.Name), w.Name)
	}
}

// Local prefill on a decode worker, a session's next turn served from its
// residency, and the cached blocks measured by the published index.
func TestLocalAndResidency(t *testing.T) {
	f, err := fleet.New(spec(t), fleet.Options{})
	require.NoError(t, err)
	var outs []fleet.Out
	id := int64(0)
	for s := int32(0); s < 6; s++ {
		require.NoError(t, f.Submit(f.Now(), fleet.Call{Worker: fmt.Sprint("d", s%3), Req: req(id, s, 0, 30, 10)}))
		id++
	}
	run(f, &outs)
	// Turn 1 of every session, on the same worker: its first 30 blocks are
	// published there.
	for s := int32(0); s < 6; s++ {
		require.NoError(t, f.Submit(f.Now(), fleet.Call{Worker: fmt.Sprint("d", s%3), Req: req(id, s, 1, 45, 10)}))
		id++
	}
	run(f, &outs)
	e := ends(outs)
	for i := int64(6); i < 12; i++ {
		require.Equal(t, fleet.OutDone, e[i].Kind)
		assert.Equal(t, 30, e[i].CachedBlocks, "request %d", i)
		assert.Equal(t, "Direct", e[i].Job.Mode.String())
		assert.GreaterOrEqual(t, e[i].Job.CachedTokens, 30*24)
	}
	checkResidency(t, f, outs)
}

func TestDrainAndAdd(t *testing.T) {
	f, err := fleet.New(spec(t), fleet.Options{Startup: func(topology.Worker) time.Duration { return 2 * time.Second }})
	require.NoError(t, err)
	var outs []fleet.Out
	for i := range int64(4) {
		require.NoError(t, f.Submit(0, fleet.Call{Worker: "d2", Req: req(i, int32(i), 0, 50, 10)}))
	}
	require.NoError(t, f.Drain(0, "d2"))
	err = f.Submit(0, fleet.Call{Worker: "d2", Req: req(9, 9, 0, 10, 0)})
	assert.ErrorIs(t, err, fleet.ErrDraining)
	require.NoError(t, f.Add(0, topology.Worker{Name: "d4"}, fleet.RoleDecode, "d1"))
	err = f.Submit(0, fleet.Call{Worker: "d4", Req: req(10, 10, 0, 10, 0)})
	assert.ErrorIs(t, err, fleet.ErrNotReady)
	run(f, &outs)
	e := ends(outs)
	for i := range int64(4) {
		assert.Equal(t, fleet.OutDone, e[i].Kind, "in-flight request %d of the drained worker", i)
	}
	w, _ := f.Worker("d2")
	assert.Equal(t, fleet.StateGone, w.State)
	w, _ = f.Worker("d4")
	assert.Equal(t, fleet.StateReady, w.State)
	assert.Equal(t, 2*time.Second, w.ReadyAt)
	require.NoError(t, f.Submit(f.Now(), fleet.Call{Worker: "d4", Req: req(11, 11, 0, 10, 0)}))
	run(f, &outs)
	assert.Equal(t, fleet.OutDone, ends(outs)[11].Kind)
	checkResidency(t, f, outs)
	// A new decode worker is reachable from p1 like d1.
	require.NoError(t, f.Submit(f.Now(), remotePrefill(req(12, 12, 0, 20, 0))))
	run(f, &outs)
	h := *ends(outs)[12].Handoff
	require.NoError(t, f.Submit(f.Now(), fleet.Call{Worker: "d4", Req: req(13, 12, 0, 20, 0), Pull: &h}))
	run(f, &outs)
	assert.Equal(t, fleet.OutDone, ends(outs)[13].Kind)
}

// Same calls, same outputs.
func TestDeterministic(t *testing.T) {
	once := func() string {
		f, err := fleet.New(spec(t), fleet.Options{})
		require.NoError(t, err)
		var outs []fleet.Out
		for i := range int64(20) {
			_ = f.Submit(time.Duration(i)*time.Millisecond, fleet.Call{Worker: fmt.Sprint("d", i%3), Req: req(i, int32(i%5), int(i/5), 20+int(i), 5)})
		}
		run(f, &outs)
		s := ""
		for _, o := range outs {
			s += fmt.Sprintf("%d %v %s %v %v|", o.Kind, o.At, o.Worker, o.Stored, o.Removed)
		}
		return s
	}
	assert.Equal(t, once(), once())
}

func specNamed(t testing.TB, name string) *topology.Spec {
	t.Helper()
	return testkit.Scenario(t, name, topology.Options{})
}

// A fused worker is a whole vLLM pod: its prefix cache is shared across
// sessions, its events add up to its HBM and DRAM tiers, and a hand-off is
// refused.
func TestFused(t *testing.T) {
	f, err := fleet.New(specNamed(t, "buckets-3"), fleet.Options{})
	require.NoError(t, err)
	var outs []fleet.Out
	for s := int32(0); s < 4; s++ {
		require.NoError(t, f.Submit(f.Now(), fleet.Call{Worker: "s0", Req: req(int64(s), s, 0, 30, 10)}))
	}
	run(f, &outs)
	for s := int32(0); s < 4; s++ {
		require.NoError(t, f.Submit(f.Now(), fleet.Call{Worker: "s0", Req: req(int64(4+s), s, 1, 40, 10)}))
	}
	run(f, &outs)
	e := ends(outs)
	for i := int64(0); i < 8; i++ {
		require.Equal(t, fleet.OutDone, e[i].Kind, "request %d", i)
		assert.Equal(t, "Fused", e[i].Job.Mode.String())
	}
	assert.Equal(t, 30, e[4].CachedBlocks, "the session's previous prompt")
	assert.Equal(t, 10, e[1].CachedBlocks, "the shared system prompt of another session")
	assert.GreaterOrEqual(t, e[4].Job.CachedTokens, 30*24)
	err = f.Submit(f.Now(), fleet.Call{Worker: "s0", Req: req(99, 9, 0, 10, 0), RemoteDecode: true})
	assert.Error(t, err)
	checkResidency(t, f, outs)
	jobs := f.Ended()
	f.ResolveColumns(jobs)
	_, dec := f.Names()
	assert.Equal(t, "s0", dec[jobs[0].D])
}

// pull runs one prefill call per request on p0 and then, all at the same
// instant, their decode calls on the given workers; it returns the decode
// jobs' transfer times.
func pulls(t *testing.T, f *fleet.Fleet, to []string, blocks int) []time.Duration {
	t.Helper()
	var outs []fleet.Out
	pullRound++
	base := int64(pullRound) * 1000 // fresh sessions: nothing is resident yet
	for i := range to {
		require.NoError(t, f.Submit(f.Now(), remotePrefill(req(base+int64(i), int32(base)+int32(i), 0, blocks, 0))))
	}
	run(f, &outs)
	e := ends(outs)
	now := f.Now()
	for i, d := range to {
		h := e[base+int64(i)].Handoff
		require.NotNil(t, h)
		require.NoError(t, f.Submit(now, fleet.Call{Worker: d, Req: req(base+100+int64(i), int32(base)+int32(i), 0, blocks, 0), Pull: h}))
	}
	run(f, &outs)
	e = ends(outs)
	var out []time.Duration
	for i := range to {
		j := e[base+100+int64(i)].Job
		require.Empty(t, j.Failed)
		out = append(out, j.TransferEnd-j.TransferStart)
	}
	return out
}

var pullRound int

// The pull costs what the link model says: TCP is slower than RDMA, and
// pulls sharing a NIC share its bandwidth.
func TestPullCost(t *testing.T) {
	rdma, err := fleet.New(spec(t), fleet.Options{})
	require.NoError(t, err)
	alone := pulls(t, rdma, []string{"d0"}, 200)[0]
	shared := pulls(t, rdma, []string{"d0", "d0"}, 200) // both over p0's NIC to d0
	apart := pulls(t, rdma, []string{"d1", "d2"}, 200)  // each over its own NIC
	assert.Greater(t, shared[0], alone*3/2, "two pulls on one NIC share it")
	assert.Less(t, apart[0], alone*11/10, "pulls on separate NICs do not")
	tcp, err := fleet.New(specNamed(t, "1p3d-tcp"), fleet.Options{})
	require.NoError(t, err)
	slow := pulls(t, tcp, []string{"d0"}, 200)[0]
	assert.Greater(t, slow, alone, "TCP (%v) is slower than RDMA (%v)", slow, alone)
	t.Logf("4,800-token pull: RDMA %v alone, %v shared by two, TCP %v", alone, shared[0], slow)
}

// Draining a prefill worker waits for the pulls from its NICs; its
// hand-offs not pulled yet die with it.
func TestDrainPrefill(t *testing.T) {
	f, err := fleet.New(spec(t), fleet.Options{})
	require.NoError(t, err)
	var outs []fleet.Out
	for i := range int64(2) {
		require.NoError(t, f.Submit(0, remotePrefill(req(i, int32(i), 0, 200, 0))))
	}
	run(f, &outs)
	h0, h1 := ends(outs)[0].Handoff, ends(outs)[1].Handoff
	now := f.Now()
	require.NoError(t, f.Submit(now, fleet.Call{Worker: "d0", Req: req(10, 0, 0, 200, 0), Pull: h0}))
	require.NoError(t, f.Drain(now, "p0"))
	w, _ := f.Worker("p0")
	assert.Equal(t, fleet.StateDraining, w.State, "a pull from its NIC is in flight")
	run(f, &outs)
	assert.Equal(t, fleet.OutDone, ends(outs)[10].Kind)
	w, _ = f.Worker("p0")
	assert.Equal(t, fleet.StateGone, w.State)
	require.NoError(t, f.Submit(f.Now(), fleet.Call{Worker: "d1", Req: req(11, 1, 0, 200, 0), Pull: h1}))
	run(f, &outs)
	assert.Equal(t, fleet.ReasonEngineGone, ends(outs)[11].Job.Failed)
	checkResidency(t, f, outs)
}

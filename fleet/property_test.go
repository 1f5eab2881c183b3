package fleet_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/pdemu/pdemu/fleet"
	"github.com/pdemu/pdemu/topology"
)

// Any sequence of calls — prefill calls, pulls (good, reused or stale),
// local decodes, adds and drains, at increasing times — ends every
// started request exactly once, and the KV events replay to every
// worker's residency.
func TestPropertyExactlyOnce(t *testing.T) {
	base := spec(t)
	rapid.Check(t, func(rt *rapid.T) {
		f, err := fleet.New(base, fleet.Options{HoldTimeout: 2 * time.Second,
			Startup: func(topology.Worker) time.Duration { return 300 * time.Millisecond }})
		require.NoError(rt, err)
		var outs []fleet.Out
		started := map[int64]bool{}
		var handoffs []*fleet.Handoff
		decodes := []string{"d0", "d1", "d2"}
		now := time.Duration(0)
		id := int64(0)
		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for range steps {
			now += time.Duration(rapid.IntRange(0, 400).Draw(rt, "dt")) * time.Millisecond
			f.Advance(now)
			outs = append(outs, f.Take()...)
			for _, o := range outs {
				if o.Kind == fleet.OutDone && o.Handoff != nil {
					handoffs = append(handoffs, o.Handoff)
				}
			}
			sess := int32(rapid.IntRange(0, 7).Draw(rt, "session"))
			blocks := rapid.IntRange(1, 60).Draw(rt, "blocks")
			r := req(id, sess, 0, blocks, 5)
			var c fleet.Call
			switch rapid.IntRange(0, 5).Draw(rt, "op") {
			case 0, 1:
				r.OutputLen = 1
				c = fleet.Call{Worker: "p0", Req: r, RemoteDecode: true}
			case 2:
				if len(handoffs) == 0 {
					continue
				}
				h := handoffs[rapid.IntRange(0, len(handoffs)-1).Draw(rt, "h")]
				r.InputLen, r.Blocks = h.InputLen, h.Blocks
				c = fleet.Call{Worker: rapid.SampledFrom(decodes).Draw(rt, "d"), Req: r, Pull: h}
			case 3:
				c = fleet.Call{Worker: rapid.SampledFrom(decodes).Draw(rt, "d"), Req: r}
			case 4:
				name := fmt.Sprint("x", id)
				if f.Add(now, topology.Worker{Name: name}, fleet.RoleDecode, "") == nil {
					decodes = append(decodes, name)
				}
				continue
			case 5:
				_ = f.Drain(now, rapid.SampledFrom(decodes).Draw(rt, "drain"))
				continue
			}
			if f.Submit(now, c) == nil {
				started[id] = true
			}
			id++
		}
		run(f, &outs)
		ended := map[int64]int{}
		for _, o := range outs {
			if o.Kind == fleet.OutDone || o.Kind == fleet.OutFailed {
				ended[o.Job.Req.ID]++
			}
		}
		for id := range started {
			require.Equal(rt, 1, ended[id], "request %d", id)
		}
		require.Len(rt, ended, len(started))
		require.Empty(rt, f.InFlight())
		r := replay{}
		r.apply(outs)
		for _, w := range f.Workers() {
			want := f.Residency(w.Name)
			got := r.blocks(w.Name)
			require.ElementsMatch(rt, want, got, "worker %s", w.Name)
		}
	})
}

package actors

import (
	"context"
	"io"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/workload"
)

// burstSource: 24 sessions start together (a burst that saturates the
// decode workers), 18 of them end after 6 turns, the other 6 go on for 30
// turns in a cluster that now has room for them.
type burstSource struct {
	reqs []*workload.Request
	next int
}

func newBurstSource() *burstSource {
	const (
		sessions, longSessions = 24, 6
		shortTurns, longTurns  = 6, 30
		system, first, step    = 4000, 4000, 900
		bt                     = 24
	)
	var all []*workload.Request
	for s := 0; s < sessions; s++ {
		turns := shortTurns
		if s < longSessions {
			turns = longTurns
		}
		in, at := system+first, time.Duration(s)*10*time.Millisecond
		for t := 0; t < turns; t++ {
			if t > 0 {
				in += 100 + step
				at += 3 * time.Second
			}
			blocks := make([]uint64, in/bt)
			for i := range blocks {
				if i < system/bt {
					blocks[i] = uint64(i + 1)
				} else {
					blocks[i] = uint64(s+1)<<32 | uint64(i+1)
				}
			}
			r := &workload.Request{Session: int32(s), SessionName: string(rune('A' + s)), Turn: t,
				Arrival: at, InputLen: in, OutputLen: 100, Blocks: blocks, BlockTokens: bt,
				AppendLen: step, Last: t == turns-1}
			if t > 0 {
				r.Think = time.Second
			} else {
				r.AppendLen = in
			}
			all = append(all, r)
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Arrival < all[j].Arrival })
	for i, r := range all {
		r.ID = int64(i)
	}
	return &burstSource{reqs: all}
}

func (b *burstSource) Next() (*workload.Request, error) {
	if b.next == len(b.reqs) {
		return nil, io.EOF
	}
	b.next++
	return b.reqs[b.next-1], nil
}

// TestBurstV1ThrashesV2Settles is the KVC paper's §3.4 pathology end to
// end: after a burst of rejections, v1 (no reset-on-success) keeps the
// surviving sessions' home workers blacklisted and goes on migrating and
// falling back; v2 settles once the burst is over.
func TestBurstV1ThrashesV2Settles(t *testing.T) {
	after := map[bool]int{} // v1 → migrations+fallbacks of long sessions after the burst
	for _, v1 := range []bool{false, true} {
		spec := loadScenario(t, scenarios.Default)
		spec.Router.V1 = v1
		spec.Router.Epsilon = 1
		// The burst is sized for P's prefix cache serving reseeds (the model
		// before issue 10); under the seed-time snapshot backup every reseed
		// re-prefills its whole session and the burst lasts past turn 12 for
		// v2 too (6 migrations+fallbacks each for v1 and v2).
		spec.Router.PrefillCacheBackup = true
		res, err := Run(context.Background(), spec, Options{Logger: testLogger(t), Source: newBurstSource()})
		require.NoError(t, err)
		require.Equal(t, res.Summary.Requests.Total, res.Summary.Requests.Completed+res.Summary.Requests.Failed)
		pinned := map[string]string{}
		for _, r := range res.Records { // sorted by id, so by arrival
			if r.Failed {
				continue
			}
			prev, seen := pinned[r.Session]
			moved := seen && r.D != prev && r.Mode != "Fallback"
			if r.Mode != "Fallback" {
				pinned[r.Session] = r.D
			}
			if r.Turn >= 12 && (moved || r.Mode == "Fallback") {
				after[v1]++
			}
		}
		t.Logf("v1=%v: %d migrations+fallbacks after the burst; router %+v", v1, after[v1], *res.Summary.Router)
		if !v1 {
			// Invariant 3's bound holds for every session under v2 here.
			assert.LessOrEqual(t, res.Summary.Router.MaxSessionMigrations, (len(spec.Decode)-1)*spec.Router.TauReject)
		}
	}
	assert.Zero(t, after[false], "v2 settles once the burst is over")
	assert.Positive(t, after[true], "v1 keeps migrating and falling back after the burst")
}

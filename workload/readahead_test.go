package workload

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestReadAheadReleasesEqualRequests: whatever the blocks of a session's
// turns (the same growing array, an equal copy, unrelated blocks, none),
// the closed-loop driver, holding read-ahead turns compacted, releases
// requests equal to the source's, each once, with blocks of cap == len
// when compacted.
func TestReadAheadReleasesEqualRequests(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nSess := rapid.IntRange(1, 6).Draw(t, "sessions")
		turns := make([]int, nSess)
		blocks := make([][]uint64, nSess)
		var reqs []*Request
		var at time.Duration
		left := 0
		for s := range turns {
			turns[s] = rapid.IntRange(1, 8).Draw(t, "turns")
			left += turns[s]
		}
		next := make([]int, nSess)
		for left > 0 {
			s := rapid.IntRange(0, nSess-1).Draw(t, "s")
			if next[s] >= turns[s] {
				continue
			}
			turn := next[s]
			next[s]++
			left--
			switch rapid.IntRange(0, 4).Draw(t, "blocks") {
			case 0, 1: // grow the shared array
				for k := rapid.IntRange(0, 5).Draw(t, "grow"); k > 0; k-- {
					blocks[s] = append(blocks[s], rapid.Uint64().Draw(t, "b"))
				}
			case 2: // an equal copy, grown
				blocks[s] = append(append([]uint64(nil), blocks[s]...), 7)
			case 3: // unrelated blocks
				blocks[s] = []uint64{rapid.Uint64().Draw(t, "x")}
			case 4: // none
				blocks[s] = nil
			}
			name := "s"
			if rapid.IntRange(0, 9).Draw(t, "rename") == 0 {
				name = "other"
			}
			at += time.Duration(rapid.IntRange(0, 3).Draw(t, "gap")) * time.Millisecond
			nb := len(blocks[s])
			r := &Request{ID: int64(len(reqs)), Session: int32(s), SessionName: name, Turn: turn, Arrival: at,
				Think:    time.Duration(rapid.IntRange(0, 5).Draw(t, "think")) * time.Millisecond,
				InputLen: rapid.IntRange(1, 1<<20).Draw(t, "in"), OutputLen: 1 + turn, AppendLen: 3, BlockTokens: 16,
				Last: turn == turns[s]-1}
			if blocks[s] != nil {
				r.Blocks = blocks[s][:nb:nb]
			}
			reqs = append(reqs, r)
		}
		want := make([]Request, len(reqs)) // the values as emitted
		for i, r := range reqs {
			want[i] = *r
			want[i].Blocks = append([]uint64(nil), r.Blocks...)
		}
		d := NewDriver(&sliceSource{reqs: reqs}, true)
		var inFlight []*Request
		got := map[int64]bool{}
		now := time.Duration(0)
		take := func() {
			for _, rel := range d.Ready().Out {
				r := rel.Req
				if got[r.ID] {
					t.Fatalf("request %d released twice", r.ID)
				}
				got[r.ID] = true
				w := want[r.ID]
				if r.ID != w.ID || r.Session != w.Session || r.SessionName != w.SessionName || r.Turn != w.Turn ||
					r.Arrival != w.Arrival || r.Think != w.Think || r.InputLen != w.InputLen || r.OutputLen != w.OutputLen ||
					r.AppendLen != w.AppendLen || r.BlockTokens != w.BlockTokens || r.Last != w.Last || len(r.Blocks) != len(w.Blocks) {
					t.Fatalf("request %d released as %+v, emitted as %+v", r.ID, *r, w)
				}
				for i := range w.Blocks {
					if r.Blocks[i] != w.Blocks[i] {
						t.Fatalf("request %d block %d: %x, emitted %x", r.ID, i, r.Blocks[i], w.Blocks[i])
					}
				}
				if (r.Blocks == nil) != (w.Blocks == nil) && len(w.Blocks) > 0 {
					t.Fatalf("request %d: blocks nil-ness changed", r.ID)
				}
				inFlight = append(inFlight, r)
				if err := d.Released(r, now); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := d.Start(now); err != nil {
			t.Fatal(err)
		}
		take()
		for len(inFlight) > 0 {
			i := rapid.IntRange(0, len(inFlight)-1).Draw(t, "end")
			r := inFlight[i]
			inFlight = append(inFlight[:i], inFlight[i+1:]...)
			now += time.Millisecond
			if err := d.Ended(r, now); err != nil {
				t.Fatal(err)
			}
			take()
		}
		if len(got) != len(reqs) || !d.Done() {
			t.Fatalf("released %d of %d requests (done %v)", len(got), len(reqs), d.Done())
		}
	})
}

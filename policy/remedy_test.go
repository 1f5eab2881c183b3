package policy

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// admitAt makes session s resident on d with blocks (an accepted Seed).
func admitAt(k *KVC, s int32, d int, blocks []uint64) {
	ds := NewDispatch(req(s, 0, blocks))
	k.Admitted(ds, d, ModeSeed)
}

// TestOwnOverlap: with OwnOverlap, blocks other sessions left on a worker
// (a shared system prompt) do not count; the session's own record does.
func TestOwnOverlap(t *testing.T) {
	shared := chainBlocks(99, 8) // a system prompt every session starts with
	mine := append(append([]uint64{}, shared...), chainBlocks(0, 4)...)
	for _, tc := range []struct {
		name string
		own  bool
		want int
	}{
		{"literal Algorithm 1: the worker holding the shared prefix wins", false, 0},
		{"own overlap: nobody holds session 0's blocks, the least loaded wins", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newKVC(t, KVCConfig{Alpha: 1, Decode: 3, OwnOverlap: tc.own})
			admitAt(k, 7, 0, shared) // session 7 left the shared prefix on d0
			k.inflight[0], k.inflight[1], k.inflight[2] = 1, 0, 0
			k.assigned[2] = 5
			require.Equal(t, tc.want, k.Route(NewDispatch(req(0, 0, mine))))
		})
	}

	// The session's own record counts as its common prefix with the request.
	k := newKVC(t, KVCConfig{Alpha: 0, Decode: 3, OwnOverlap: true})
	admitAt(k, 7, 0, mine)     // another session, identical blocks, on d0
	admitAt(k, 0, 2, mine[:6]) // session 0 itself on d2 (pinned)
	admitAt(k, 0, 1, mine[:9]) // and later on d1 (pin moves to d1)
	require.Equal(t, 1, k.Pin(0))
	ov := make([]int, 3)
	d, _, _ := k.route(NewDispatch(req(0, 1, mine)), k.sess[0], ov, false)
	require.Equal(t, 1, d)
	require.Equal(t, []int{0, 9, 6}, ov)

	// An eviction notice removes the worker from the session's set.
	k.Evicted(1, 0)
	k.Evicted(2, 0)
	require.Empty(t, k.sess[0].resident)
	_, _, _ = k.route(NewDispatch(req(0, 1, mine)), k.sess[0], ov, false)
	require.Equal(t, []int{0, 0, 0}, ov)
}

// TestLoadFloor: unpinned candidates with inflight ≥ floor + LoadFloor are
// skipped, the pinned worker is exempt, and tried or blacklisted workers
// do not set the floor.
func TestLoadFloor(t *testing.T) {
	B := chainBlocks(0, 10)
	cases := []struct {
		name     string
		floor    int
		inflight []int
		pin      int
		tried    []int
		rejects  []int32
		want     int
	}{
		{"off: the overlap wins whatever the load", 0, []int{9, 0, 0}, -1, nil, nil, 0},
		{"floor 2: d0 is 9 above the floor, skipped", 2, []int{9, 0, 0}, -1, nil, nil, 1},
		{"floor 10: d0 is within the slack", 10, []int{9, 0, 0}, -1, nil, nil, 0},
		{"the pinned worker is exempt", 1, []int{9, 0, 0}, 0, nil, nil, 0},
		{"a tried worker does not set the floor", 2, []int{9, 0, 8}, -1, []int{1}, nil, 0},
		{"a blacklisted worker does not set the floor", 2, []int{9, 0, 8}, -1, nil, []int32{0, 3, 0}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := newKVC(t, KVCConfig{Alpha: 1, Decode: 3, LoadFloor: tc.floor})
			admitAt(k, 7, 0, B) // another session's blocks on d0: overlap 10 there
			copy(k.inflight, tc.inflight)
			st := k.state(0)
			st.pin = int32(tc.pin)
			if tc.rejects != nil {
				for d, v := range tc.rejects {
					k.setRejects(st, d, v)
				}
			}
			ds := NewDispatch(req(0, 0, B))
			for _, d := range tc.tried {
				ds.markTried(d)
			}
			require.Equal(t, tc.want, k.Route(ds))
		})
	}
	_, err := NewKVC(KVCConfig{Alpha: 1, TauReject: 3, Epsilon: 2, Prefill: 1, Decode: 1, LoadFloor: -1})
	require.Error(t, err)
}

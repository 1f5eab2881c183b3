package workload

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type sliceSource struct {
	reqs []*Request
	i    int
}

func (s *sliceSource) Next() (*Request, error) {
	if s.i >= len(s.reqs) {
		return nil, io.EOF
	}
	s.i++
	return s.reqs[s.i-1], nil
}

// runDriver plays src through a driver with a fixed service time per request
// and returns the release times and the peak number outstanding.
func runDriver(t *testing.T, src Source, closed bool, service time.Duration) (map[int64]time.Duration, int) {
	d := NewDriver(src, closed)
	type ev struct {
		at   time.Duration
		rel  bool
		req  *Request
		seqn int
	}
	var q []ev
	seq := 0
	push := func(err error) {
		require.NoError(t, err)
		for _, r := range d.Ready().Out {
			seq++
			q = append(q, ev{at: r.At, rel: true, req: r.Req, seqn: seq})
		}
	}
	push(d.Start(0))
	rel := map[int64]time.Duration{}
	inflight, peak := 0, 0
	for len(q) > 0 {
		b := 0
		for i := range q {
			if q[i].at < q[b].at || (q[i].at == q[b].at && q[i].seqn < q[b].seqn) {
				b = i
			}
		}
		e := q[b]
		q = append(q[:b], q[b+1:]...)
		if e.rel {
			rel[e.req.ID] = e.at
			inflight++
			peak = max(peak, inflight)
			seq++
			q = append(q, ev{at: e.at + service, req: e.req, seqn: seq})
			push(d.Released(e.req, e.at))
		} else {
			inflight--
			push(d.Ended(e.req, e.at))
		}
	}
	require.True(t, d.Done())
	return rel, peak
}

func TestClientCapOpenLoop(t *testing.T) {
	// Ten single-turn sessions all due at t=0, 1 s of service each.
	mk := func() Source {
		var reqs []*Request
		for i := range 10 {
			reqs = append(reqs, &Request{ID: int64(i), Session: int32(i), InputLen: 10, OutputLen: 1, Last: true})
		}
		return &sliceSource{reqs: reqs}
	}
	rel, peak := runDriver(t, mk(), false, time.Second)
	require.Equal(t, 10, peak, "no cap: all at once")
	require.Equal(t, time.Duration(0), rel[9])

	rel, peak = runDriver(t, WithClientCap(mk(), 3), false, time.Second)
	require.Equal(t, 3, peak, "the cap bounds the requests outstanding")
	require.Equal(t, time.Duration(0), rel[2])
	require.Equal(t, time.Second, rel[3], "the 4th waits for the first to end")
	require.Equal(t, 3*time.Second, rel[9])
}

func TestClientCapKeepsTimelineWhenNotBinding(t *testing.T) {
	// The paper's timeline: a cap of 32 over the 5.44 h SWE-Bench trace
	// changes no release time (few sessions overlap); ActiveSessions 32
	// instead compresses the timeline.
	cfg := SWEBenchConfig{Sessions: 12, Requests: 600}
	g1, err := NewSWEBench(cfg, 5)
	require.NoError(t, err)
	g2, err := NewSWEBench(cfg, 5)
	require.NoError(t, err)
	free, _ := runDriver(t, g1, false, 2*time.Second)
	capped, peak := runDriver(t, WithClientCap(g2, 32), false, 2*time.Second)
	require.Equal(t, free, capped)
	require.LessOrEqual(t, peak, 32)

	g3, err := NewSWEBench(SWEBenchConfig{Sessions: 12, Requests: 600, ActiveSessions: 6}, 5)
	require.NoError(t, err)
	active, _ := runDriver(t, g3, false, 2*time.Second)
	var endFree, endActive time.Duration
	for _, v := range free {
		endFree = max(endFree, v)
	}
	for _, v := range active {
		endActive = max(endActive, v)
	}
	require.Less(t, endActive, endFree/2, "ActiveSessions compresses the timeline")
}

func TestClientCapClosedLoop(t *testing.T) {
	// Two sessions of three turns, both starting at 0, cap 1: one session's
	// turns interleave behind the other's, never two outstanding.
	var reqs []*Request
	id := int64(0)
	for turn := range 3 {
		for s := range 2 {
			reqs = append(reqs, &Request{ID: id, Session: int32(s), Turn: turn, InputLen: 10, OutputLen: 1, Last: turn == 2})
			id++
		}
	}
	_, peak := runDriver(t, WithClientCap(&sliceSource{reqs: reqs}, 1), true, time.Second)
	require.Equal(t, 1, peak)
}

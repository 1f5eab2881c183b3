package metrics

import (
	"math"
	"sort"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// refSeries is Series as it was before the compact store: every kept
// point a Sample in one slice (the reference of TestSeriesEqualsReference).
type refSeries struct {
	pts    []Sample
	grid   time.Duration
	maxOut int
	maxPts int
}

func (s *refSeries) Observe(t time.Duration, kv, queue, running int) {
	if n := len(s.pts); n > 0 {
		last := &s.pts[n-1]
		if last.KV == kv && last.Queue == queue && last.Running == running {
			return
		}
		if last.T == t {
			last.KV, last.Queue, last.Running = kv, queue, running
			return
		}
		if s.grid > 0 && !sampleIn(last.T, t, s.grid) {
			s.maxOut = max(s.maxOut, last.KV)
			*last = Sample{T: t, KV: kv, Queue: queue, Running: running}
			return
		}
	}
	s.pts = append(s.pts, Sample{T: t, KV: kv, Queue: queue, Running: running})
	for s.maxPts > 0 && len(s.pts) > s.maxPts && s.grid > 0 && s.grid < math.MaxInt64/2 {
		s.grid *= 2
		kept := s.pts[:0]
		for i, p := range s.pts {
			if i == len(s.pts)-1 || sampleIn(p.T, s.pts[i+1].T, s.grid) {
				kept = append(kept, p)
			} else {
				s.maxOut = max(s.maxOut, p.KV)
			}
		}
		s.pts = kept
	}
}

func (s *refSeries) At(t time.Duration) Sample {
	i := sort.Search(len(s.pts), func(i int) bool { return s.pts[i].T > t })
	if i == 0 {
		return Sample{T: t}
	}
	p := s.pts[i-1]
	p.T = t
	return p
}

func (s *refSeries) Max() int {
	m := s.maxOut
	for _, p := range s.pts {
		m = max(m, p.KV)
	}
	return m
}

// TestSeriesEqualsReference: the compact series answers At (by search
// and by cursor), Max, Points and Grid as the slice of Samples did, for
// any non-decreasing observation times (ties, long gaps, values that
// repeat, grow and shrink across chunk boundaries), with and without a
// grid and a point bound.
func TestSeriesEqualsReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, ref := NewSeries("w", "decode"), &refSeries{}
		if rapid.Bool().Draw(t, "grid") {
			g := time.Duration(rapid.Int64Range(1, 5e9).Draw(t, "iv"))
			s.SetGrid(g)
			ref.grid = g
			if rapid.Bool().Draw(t, "bounded") {
				n := rapid.IntRange(2, 300).Draw(t, "maxPts")
				s.SetMaxPoints(n)
				ref.maxPts = max(n, 2)
			}
		}
		now := time.Duration(rapid.Int64Range(0, 1e12).Draw(t, "t0"))
		for range rapid.IntRange(0, 2500).Draw(t, "n") {
			switch rapid.IntRange(0, 9).Draw(t, "gap") {
			case 0: // same instant
			case 1:
				now += time.Duration(rapid.Int64Range(0, 1e15).Draw(t, "long"))
			default:
				now += time.Duration(rapid.Int64Range(0, 3e9).Draw(t, "dt"))
			}
			kv := rapid.IntRange(-5, 1<<20).Draw(t, "kv")
			if rapid.IntRange(0, 3).Draw(t, "small") != 0 {
				kv %= 7
			}
			q, r := rapid.IntRange(0, 3).Draw(t, "q"), rapid.IntRange(0, 1<<31).Draw(t, "r")
			s.Observe(now, kv, q, r)
			ref.Observe(now, kv, q, r)
		}
		if s.Points() != len(ref.pts) || s.Grid() != ref.grid || s.Max() != ref.Max() {
			t.Fatalf("points %d/%d grid %v/%v max %d/%d", s.Points(), len(ref.pts), s.Grid(), ref.grid, s.Max(), ref.Max())
		}
		var probes []time.Duration
		for _, p := range ref.pts {
			probes = append(probes, p.T-1, p.T, p.T+1)
		}
		for range 50 {
			probes = append(probes, time.Duration(rapid.Int64Range(0, int64(now)+10).Draw(t, "probe")))
		}
		probes = append(probes, math.MaxInt64)
		for _, p := range probes {
			if got, want := s.At(p), ref.At(p); got != want {
				t.Fatalf("At(%d) = %+v, want %+v", p, got, want)
			}
		}
		sort.Slice(probes, func(i, j int) bool { return probes[i] < probes[j] })
		c := s.cursor()
		for _, p := range probes {
			if got, want := c.at(p), ref.At(p); got != want {
				t.Fatalf("cursor at(%d) = %+v, want %+v", p, got, want)
			}
		}
	})
}

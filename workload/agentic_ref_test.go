package workload

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/pdemu/pdemu/internal/splitmix"
)

// refAgentic is the agentic generator as it was before issue 24: every
// session's first Request built up front and every session in the heap.
// The generator now builds a first Request when its session starts and
// keeps the sessions not started out of the heap; its stream must be
// this one.
func refAgentic(cfg AgenticConfig, seed uint64, maxRequests int) []Request {
	cfg = GeneratorDefaults(cfg)
	g := &Agentic{cfg: cfg, seed: seed, rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), max: int64(maxRequests)}
	var start time.Duration
	var sessions []*genSession
	for i := 0; i < cfg.Sessions; i++ {
		if i > 0 {
			start += g.expDur(cfg.SessionStagger)
		}
		s := &genSession{idx: int32(i), turns: cfg.Turns, arrival: start, salt: splitmix.Mix64(seed ^ uint64(i+1)*0xbf58476d1ce4e5b9)}
		s.pending = g.make(s)
		sessions = append(sessions, s)
	}
	g.h.Less = lessSession
	g.h.Init(sessions)
	var out []Request
	for g.h.Len() > 0 && (g.max == 0 || g.nextID < g.max) {
		s := *g.h.Min()
		r := s.pending
		r.ID = g.nextID
		g.nextID++
		out = append(out, *r)
		s.turn++
		if s.turn >= s.turns {
			g.h.Pop()
		} else {
			s.pending = g.make(s)
			g.h.Fix(0)
		}
	}
	return out
}

// drawAgentic draws a generator configuration of at most sessions
// sessions and turns turns, a seed and a request limit (0: none).
func drawAgentic(t *rapid.T, sessions, turns int) (AgenticConfig, uint64, int) {
	cfg := AgenticConfig{
		Sessions:       rapid.IntRange(1, sessions).Draw(t, "sessions"),
		Turns:          rapid.IntRange(1, turns).Draw(t, "turns"),
		SystemTokens:   rapid.IntRange(0, 3000).Draw(t, "system"),
		FirstTokens:    rapid.IntRange(1, 3000).Draw(t, "first"),
		AppendTokens:   rapid.IntRange(1, 800).Draw(t, "append"),
		OutputTokens:   rapid.IntRange(1, 300).Draw(t, "output"),
		BlockTokens:    rapid.IntRange(1, 64).Draw(t, "blockTokens"),
		ThinkTime:      time.Duration(rapid.IntRange(1, 5000).Draw(t, "thinkMs")) * time.Millisecond,
		SessionStagger: time.Duration(rapid.IntRange(1, 3000).Draw(t, "staggerMs")) * time.Millisecond,
	}
	return cfg, rapid.Uint64().Draw(t, "seed"), rapid.IntRange(0, 200).Draw(t, "max")
}

func TestAgenticLazyStartsIsTheEagerStream(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg, seed, maxReq := drawAgentic(t, 40, 12)
		want := refAgentic(cfg, seed, maxReq)
		g, err := NewAgentic(cfg, seed, maxReq)
		if err != nil {
			t.Fatal(err)
		}
		got := drain(t, g)
		if len(got) != len(want) {
			t.Fatalf("%d requests, the eager generator made %d", len(got), len(want))
		}
		for i := range got {
			a, b := *got[i], want[i]
			if !slices.Equal(a.Blocks, b.Blocks) {
				t.Fatalf("request %d: blocks differ", i)
			}
			a.Blocks, b.Blocks = nil, nil
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("request %d: %+v, the eager generator made %+v", i, a, b)
			}
		}
	})
}

// TestAgenticLengthsOnly: a generator switched to LengthsOnly after any
// number of requests yields the requests it would have otherwise (ids,
// sessions, turns, times, lengths, in the same order), with the same
// blocks or none.
func TestAgenticLengthsOnly(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg, seed, maxReq := drawAgentic(t, 30, 10)
		full, err := NewAgentic(cfg, seed, maxReq)
		if err != nil {
			t.Fatal(err)
		}
		want := drain(t, full)
		g, _ := NewAgentic(cfg, seed, maxReq)
		k := rapid.IntRange(0, len(want)).Draw(t, "switch after")
		var got []*Request
		for {
			if len(got) == k {
				g.LengthsOnly()
			}
			r, err := g.Next()
			if err != nil {
				break
			}
			got = append(got, r)
		}
		if len(got) != len(want) {
			t.Fatalf("%d requests, want %d", len(got), len(want))
		}
		for i := range got {
			a, b := *got[i], *want[i]
			if i < k && !slices.Equal(a.Blocks, b.Blocks) || a.Blocks != nil && !slices.Equal(a.Blocks, b.Blocks) {
				t.Fatalf("request %d (switched after %d): blocks differ", i, k)
			}
			a.Blocks, b.Blocks = nil, nil
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("request %d: %+v, want %+v", i, a, b)
			}
		}
	})
}

// BenchmarkAgenticLengthsOnly: 100k requests of the 1P3D generator's
// shape (24 turns a session), with blocks (the run) and lengths only
// (pdemu run's preflight past its replay bound).
func BenchmarkAgenticLengthsOnly(b *testing.B) {
	for _, lengthsOnly := range []bool{false, true} {
		name := "blocks"
		if lengthsOnly {
			name = "lengths-only"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				g, err := NewAgentic(AgenticConfig{Sessions: 4167, SessionStagger: 10 * time.Second}, 42, 100_000)
				if err != nil {
					b.Fatal(err)
				}
				if lengthsOnly {
					g.LengthsOnly()
				}
				for {
					if _, err := g.Next(); err != nil {
						break
					}
				}
			}
		})
	}
}

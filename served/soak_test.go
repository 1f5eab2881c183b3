package served

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/serve"
)

// countSink is a RecordSink (and an EvictionSink) that keeps nothing
// (pdemu serve streams the records to per_request.csv and the evictions
// to evictions.csv).
type countSink struct{ n, evictions atomic.Int64 }

func (c *countSink) Record(metrics.Record) error { c.n.Add(1); return nil }

func (c *countSink) Eviction(metrics.EvictionRow) error { c.evictions.Add(1); return nil }

// rssMB is the process's resident set (Linux /proc/self/statm), MiB.
func rssMB(t *testing.T) float64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skipf("no /proc/self/statm: %v", err)
	}
	f := strings.Fields(string(b))
	pages, err := strconv.ParseFloat(f[1], 64)
	require.NoError(t, err)
	return pages * float64(os.Getpagesize()) / (1 << 20)
}

// Issue 21 row 3: memory is flat in the number of requests served. A
// bounded soak (opt-in: PDEMU_SOAK_REQUESTS=N, at least 100000, and not
// -short) serves N small multi-turn chat requests from 32 clients (each
// conversation 8 turns, then a new session) through the default
// scenario at time scale 1000, records streamed (as pdemu serve streams
// them to per_request.csv), and logs the RSS after 10k requests and after
// every 100k (each the median of three readings after a GC, 1,000
// requests apart, the last at that count); every one of those points,
// under load, and the RSS once the load stopped are within 1.5× of the
// RSS at 10k. PDEMU_SOAK_SCENARIO=NAME serves another scenario (chaos:
// its faults fire, so a few requests may get an error response: counted
// and logged, allowed only for a scenario with faults).
func TestSoak(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("PDEMU_SOAK_REQUESTS"))
	if testing.Short() || n < 100000 && os.Getenv("PDEMU_SOAK_HEAP") == "" {
		t.Skip("opt-in soak: PDEMU_SOAK_REQUESTS=N (N >= 100000) go test ./served -run Soak -v -timeout 2h")
	}
	if os.Getenv("PDEMU_SOAK_HEAPS") != "" {
		// Profiles precise enough to diff two points (the default samples
		// one allocation per 512 KiB).
		old := runtime.MemProfileRate
		runtime.MemProfileRate = 4096
		defer func() { runtime.MemProfileRate = old }()
	}
	scenario := scenarios.Default
	if s := os.Getenv("PDEMU_SOAK_SCENARIO"); s != "" {
		scenario = s
	}
	spec := loadScenario(t, scenario)
	faulty := spec.Chaos != nil
	for _, w := range slices.Concat(spec.Prefill, spec.Decode, spec.Fused) {
		faulty = faulty || len(w.Faults) > 0
	}
	for _, l := range spec.Links {
		faulty = faulty || len(l.Faults) > 0
	}
	sink := &countSink{}
	base, stop := startServeSpec(t, spec, Options{TimeScale: 1000, Records: sink, HTTP: serve.Options{MaxInFlight: 64}})
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: time.Minute}
	var sent atomic.Int64
	var failures, refused, turns atomic.Int64
	type point struct {
		requests int64
		rss      float64
		heap     uint64
	}
	var mu sync.Mutex
	var curve []point
	// A point is the median of three readings (after a GC), 1,000
	// requests apart, ending at its count: one reading varies by several
	// MiB with where the GC cycle stands.
	var reads []point
	const spacing, readings = 1000, 3
	next := int64(10000)
	read := func(done int64) {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		reads = append(reads, point{done, rssMB(t), ms.HeapInuse >> 20})
	}
	closePoint := func(label int64) {
		rss := make([]float64, len(reads))
		heap := make([]uint64, len(reads))
		for i, r := range reads {
			rss[i], heap[i] = r.rss, r.heap
		}
		slices.Sort(rss)
		slices.Sort(heap)
		p := point{label, rss[len(rss)/2], heap[len(heap)/2]}
		curve = append(curve, p)
		var of strings.Builder
		for _, r := range rss {
			fmt.Fprintf(&of, " %.1f", r)
		}
		t.Logf("%7d requests: RSS %.1f MiB (median of%s), heap in use %d MiB, goroutines %d", label, p.rss, of.String(), p.heap, runtime.NumGoroutine())
		if dir := os.Getenv("PDEMU_SOAK_HEAPS"); dir != "" {
			// A heap profile per point: go tool pprof -base DIR/heap-10000.pprof DIR/heap-100000.pprof
			if w, err := os.Create(fmt.Sprintf("%s/heap-%d.pprof", dir, label)); err == nil {
				_ = pprof.WriteHeapProfile(w)
				w.Close()
			}
		}
		reads = reads[:0]
	}
	sample := func(done int64) {
		mu.Lock()
		defer mu.Unlock()
		if done < next-spacing*int64(readings-1-len(reads)) {
			return
		}
		read(done)
		if len(reads) < readings {
			return
		}
		closePoint(next)
		if next == 10000 {
			next = 100000
		} else {
			next += 100000
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	for c := range 32 {
		wg.Go(func() {
			for conv := 0; ; conv++ {
				// A real multi-turn chat: each turn re-sends the history,
				// the assistant's answers included (one session).
				msgs := []map[string]string{}
				for turn := range 8 {
					i := sent.Add(1)
					if i > int64(n) {
						return
					}
					content := fmt.Sprintf("client %d conversation %d turn %d: next step please.", c, conv, turn)
					if turn == 0 {
						content += " " + strings.Repeat("context ", 40)
					}
					msgs = append(msgs, map[string]string{"role": "user", "content": content})
					body, _ := json.Marshal(map[string]any{"model": "qwen3-coder-30b-a3b", "max_tokens": 2, "messages": msgs})
					req, _ := http.NewRequest("POST", base+"/v1/chat/completions", bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("X-Session-Id", fmt.Sprintf("soak-%d-%d", c, conv))
					res, err := hc.Do(req)
					if err != nil {
						if k := failures.Add(1); k <= 5 {
							t.Logf("request %d: %v", i, err)
							if k == 1 {
								stallEvidence(t)
							}
						}
						continue
					}
					b, _ := io.ReadAll(res.Body)
					res.Body.Close()
					if res.StatusCode != http.StatusOK {
						if faulty && res.StatusCode >= 500 {
							failures.Add(-1) // an error a fault caused: counted in refused
							if refused.Add(1) <= 5 {
								t.Logf("request %d: %d %s (a fault)", i, res.StatusCode, b)
							}
						}
						if failures.Add(1) <= 5 {
							t.Logf("request %d: %d %s", i, res.StatusCode, b)
						}
						msgs = msgs[:len(msgs)-1]
						sample(i)
						continue
					}
					var cc struct {
						Choices []struct {
							Message struct {
								Content string `json:"content"`
							} `json:"message"`
						} `json:"choices"`
						Pdemu struct {
							Turn int `json:"turn"`
						} `json:"pdemu"`
					}
					if json.Unmarshal(b, &cc) == nil && len(cc.Choices) > 0 {
						msgs = append(msgs, map[string]string{"role": "assistant", "content": cc.Choices[0].Message.Content})
						if cc.Pdemu.Turn == turn {
							turns.Add(1)
						}
					}
					sample(i)
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	if len(reads) > 0 { // the last point's readings after its count were never reached
		closePoint(min(next, int64(n)))
	}
	underLoad := len(curve)
	for range readings { // the end, the load stopped
		read(int64(n))
	}
	closePoint(int64(n))
	if f := os.Getenv("PDEMU_SOAK_HEAP"); f != "" {
		w, err := os.Create(f)
		require.NoError(t, err)
		require.NoError(t, pprof.WriteHeapProfile(w))
		w.Close()
	}
	out, err := stop()
	require.NoError(t, err)
	assert.Zero(t, failures.Load())
	t.Logf("%s: %d error responses under faults; summary: %d failed, %d faults", scenario, refused.Load(), out.Summary.Requests.Failed, len(out.Faults))
	assert.EqualValues(t, n, out.Summary.Requests.Total)
	assert.EqualValues(t, n, sink.n.Load(), "every record streamed, none kept")
	assert.Nil(t, out.Records)
	t.Logf("%d requests in %v (%.0f/s); %d continued their session as the turn they were; %d evictions streamed; summary: %d sessions forgotten, estimates %v",
		n, wall.Round(time.Second), float64(n)/wall.Seconds(), turns.Load(), sink.evictions.Load(), forgotten(out), out.Summary.Estimates != nil)
	var b strings.Builder
	for _, p := range curve {
		fmt.Fprintf(&b, " %dk:%.0fMiB", p.requests/1000, p.rss)
	}
	t.Logf("RSS curve:%s", b.String())
	require.GreaterOrEqual(t, underLoad, 2)
	// The bound holds along the curve, under load (every point but the
	// last, sampled once the clients stopped), not only at the end.
	for _, p := range curve[1:] {
		assert.LessOrEqual(t, p.rss, 1.5*curve[0].rss, "RSS after %d requests within 1.5x of RSS after 10k", p.requests)
	}
}

// stallEvidence records, at the soak's first failed call, where the
// process's goroutines wait (a goroutine dump, to a file named in the
// log) and the machine's pressure stall information, so that a timeout
// can be told apart: a server stuck on a lock, or a machine stalled.
func stallEvidence(t *testing.T) {
	for _, r := range []string{"cpu", "memory", "io"} {
		if b, err := os.ReadFile("/proc/pressure/" + r); err == nil {
			t.Logf("/proc/pressure/%s: %s", r, strings.ReplaceAll(strings.TrimSpace(string(b)), "\n", "; "))
		}
	}
	f, err := os.CreateTemp("", "pdemu-soak-goroutines-*.txt")
	if err != nil {
		return
	}
	defer f.Close()
	if pprof.Lookup("goroutine").WriteTo(f, 1) == nil {
		t.Logf("goroutines at the first failure: %s", f.Name())
	}
}

func forgotten(out *Result) int {
	if out.Summary.Router == nil {
		return 0
	}
	return out.Summary.Router.SessionsForgotten
}

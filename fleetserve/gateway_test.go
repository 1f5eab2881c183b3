package fleetserve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/fleetserve"
	"github.com/pdemu/pdemu/internal/testkit"
	"github.com/pdemu/pdemu/kvevents"
	"github.com/pdemu/pdemu/serve"
	"github.com/pdemu/pdemu/topology"
)

func loadSpec(t *testing.T) *topology.Spec {
	t.Helper()
	return testkit.Scenario(t, "1p3d-mlx5", topology.Options{})
}

// fleetUnderTest runs a fleet until the test ends it.
type fleetUnderTest struct {
	listing fleetserve.Listing
	cancel  context.CancelFunc
	done    chan struct{}
	res     *fleetserve.Result
	err     error
}

func startFleet(t *testing.T, o fleetserve.Options) *fleetUnderTest {
	t.Helper()
	return startFleetOf(t, loadSpec(t), o)
}

func startFleetOf(t *testing.T, spec *topology.Spec, o fleetserve.Options) *fleetUnderTest {
	t.Helper()
	o.Admin = "127.0.0.1:0"
	ready := make(chan fleetserve.Listing, 1)
	o.Ready = func(l fleetserve.Listing) { ready <- l }
	ctx, cancel := context.WithCancel(context.Background())
	fu := &fleetUnderTest{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(fu.done)
		fu.res, fu.err = fleetserve.Run(ctx, spec, o)
	}()
	select {
	case fu.listing = <-ready:
	case <-fu.done:
		t.Fatalf("the fleet did not start: %v", fu.err)
	case <-time.After(20 * time.Second):
		t.Fatal("the fleet did not start in 20 s")
	}
	t.Cleanup(func() {
		cancel()
		<-fu.done
	})
	return fu
}

// chatURLs are the listed workers' chat completion URLs by worker name.
func (fu *fleetUnderTest) chatURLs() map[string]string {
	url := map[string]string{}
	for _, w := range fu.listing.Workers {
		url[w.Worker] = w.URL + "/v1/chat/completions"
	}
	return url
}

func (fu *fleetUnderTest) stop(t *testing.T) {
	t.Helper()
	fu.cancel()
	select {
	case <-fu.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the fleet did not drain in 30 s")
	}
	require.NoError(t, fu.err)
}

// gateway is an in-test P/D router in front of the worker endpoints, in
// the manner of production-stack's disaggregated_prefill_orchestrated
// router: it sends the prompt to a prefill worker with max_tokens = 1 and
// kv_transfer_params.do_remote_decode, then the request with the returned
// kv_transfer_params to a decode worker. Decode workers are picked
// round-robin, or by the longest prefix they hold according to their KV
// events ("prefix"); in prefix mode a decode worker that holds most of
// the prompt gets the request directly (it prefills the rest locally).
type gateway struct {
	t     *testing.T
	admin string
	mode  atomic.Value // "rr" or "prefix"
	idx   *kvevents.Index
	ctx   context.Context

	mu       sync.Mutex
	rr       int
	subs     map[string]bool
	first    map[string]int64
	lastMsg  time.Time
	calls    []gwCall
	workerOK map[string]int // decode worker → requests it completed
	subErrs  []<-chan error
}

type gwCall struct {
	blocks    []uint64
	decode    string
	handoff   bool
	predicted int // cached tokens the KV events predict on the decode worker
	reported  int // cached tokens the decode worker reported
	input     int
}

func newGateway(t *testing.T, ctx context.Context, admin string) *gateway {
	g := &gateway{t: t, admin: admin, idx: kvevents.NewIndex(), ctx: ctx, subs: map[string]bool{},
		first: map[string]int64{}, workerOK: map[string]int{}}
	g.mode.Store("rr")
	return g
}

func (g *gateway) listing() fleetserve.Listing {
	resp, err := http.Get(g.admin + "/admin/workers")
	require.NoError(g.t, err)
	defer resp.Body.Close()
	var l fleetserve.Listing
	require.NoError(g.t, json.NewDecoder(resp.Body).Decode(&l))
	g.subscribe(l)
	return l
}

// subscribe follows the KV events of every listed worker not followed yet.
func (g *gateway) subscribe(l fleetserve.Listing) {
	for _, w := range l.Workers {
		g.mu.Lock()
		done := g.subs[w.Worker]
		g.subs[w.Worker] = true
		g.mu.Unlock()
		if done {
			continue
		}
		name := w.Worker
		errc, err := kvevents.Subscribe(g.ctx, w.KVEvents, w.KVTopic, func(m kvevents.Message) {
			g.mu.Lock()
			if _, ok := g.first[name]; !ok {
				g.first[name] = m.Seq
			}
			g.lastMsg = time.Now()
			g.mu.Unlock()
			g.idx.Apply(name, m.Seq, m.Batch)
		})
		require.NoError(g.t, err)
		g.mu.Lock()
		g.subErrs = append(g.subErrs, errc)
		g.mu.Unlock()
	}
}

// caughtUp waits until the KV events of the last decode call reached the
// index: its worker holds the call's whole prompt (at most 5 s).
func (g *gateway) caughtUp() {
	g.mu.Lock()
	if len(g.calls) == 0 {
		g.mu.Unlock()
		return
	}
	c := g.calls[len(g.calls)-1]
	g.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && g.idx.Match(c.decode, c.blocks) < len(c.blocks) {
		time.Sleep(2 * time.Millisecond)
	}
}

// quiet waits until no KV event came for 40 ms (at most 3 s).
func (g *gateway) quiet() {
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		g.mu.Lock()
		idle := time.Since(g.lastMsg)
		g.mu.Unlock()
		if idle > 40*time.Millisecond {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type chatBody struct {
	Model     string `json:"model"`
	Messages  []struct{ Role, Content string }
	MaxTokens *int `json:"max_tokens"`
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		http.Error(w, "gateway: only chat completions", http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var raw map[string]any
	var cb chatBody
	if json.Unmarshal(body, &raw) != nil || json.Unmarshal(body, &cb) != nil {
		http.Error(w, "gateway: bad body", http.StatusBadRequest)
		return
	}
	msgs := make([]serve.Message, len(cb.Messages))
	for i, m := range cb.Messages {
		msgs[i] = serve.Message{Role: m.Role, Content: m.Content}
	}
	text := serve.ChatPrompt(msgs)
	blocks := serve.PromptBlocks(text, 24, cb.Model)
	input := serve.TokenCount(len(text))

	l := g.listing()
	var pre, dec []fleetserve.Endpoint
	for _, e := range l.Workers {
		if e.State != "ready" {
			continue
		}
		if e.Role == "prefill" {
			pre = append(pre, e)
		} else {
			dec = append(dec, e)
		}
	}
	if len(pre) == 0 || len(dec) == 0 {
		http.Error(w, "gateway: no worker", http.StatusServiceUnavailable)
		return
	}
	g.mu.Lock()
	g.rr++
	rr := g.rr
	g.mu.Unlock()
	d := dec[rr%len(dec)]
	if pin := r.Header.Get("X-Gateway-Decode"); pin != "" {
		for _, e := range dec {
			if e.Worker == pin {
				d = e
			}
		}
	}
	match := g.idx.Match(d.Worker, blocks)
	prefix := g.mode.Load() == "prefix"
	if prefix {
		best := -1
		for i := range dec {
			e := dec[(rr+i)%len(dec)]
			if m := g.idx.Match(e.Worker, blocks); m > best {
				best, d = m, e
			}
		}
		match = best
	}
	handoff := !prefix || match*24 < input/2
	predicted := min(match*24, input-1)
	fwd := raw
	if handoff {
		p := pre[rr%len(pre)]
		preq := map[string]any{}
		for k, v := range raw {
			preq[k] = v
		}
		preq["max_tokens"], preq["stream"] = 1, false
		delete(preq, "stream_options")
		preq["kv_transfer_params"] = map[string]any{"do_remote_decode": true, "do_remote_prefill": false,
			"remote_engine_id": nil, "remote_block_ids": nil, "remote_host": nil, "remote_port": nil}
		pb, _ := json.Marshal(preq)
		resp, err := http.Post(p.URL+"/v1/chat/completions", "application/json", bytes.NewReader(pb))
		if err != nil {
			http.Error(w, "gateway: prefill: "+err.Error(), http.StatusBadGateway)
			return
		}
		var pr struct {
			KV map[string]any `json:"kv_transfer_params"`
		}
		rb, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || json.Unmarshal(rb, &pr) != nil || pr.KV == nil {
			http.Error(w, fmt.Sprintf("gateway: prefill %s: %d %s", p.Worker, resp.StatusCode, rb), http.StatusBadGateway)
			return
		}
		fwd = map[string]any{}
		for k, v := range raw {
			fwd[k] = v
		}
		fwd["kv_transfer_params"] = pr.KV
	}
	db, _ := json.Marshal(fwd)
	req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, d.URL+"/v1/chat/completions", bytes.NewReader(db))
	req.Header.Set("Content-Type", "application/json")
	if s := r.Header.Get("X-Session-Id"); s != "" {
		req.Header.Set("X-Session-Id", s)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, "gateway: decode: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		var dr struct {
			Usage struct {
				Details struct {
					Cached int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		_ = json.Unmarshal(out, &dr)
		g.mu.Lock()
		g.calls = append(g.calls, gwCall{blocks: blocks, decode: d.Worker, handoff: handoff, predicted: predicted, reported: dr.Usage.Details.Cached, input: input})
		g.workerOK[d.Worker]++
		g.mu.Unlock()
	}
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(out)
}

func (g *gateway) served(worker string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.workerOK[worker]
}

// session is one agentic conversation through the gateway.
type session struct {
	c    openai.Client
	msgs []openai.ChatCompletionMessageParamUnion
}

func newSession(base, id string, extra ...option.RequestOption) *session {
	opts := append([]option.RequestOption{option.WithBaseURL(base + "/v1/"), option.WithAPIKey("unused"),
		option.WithMaxRetries(0), option.WithHeader("X-Session-Id", id), option.WithRequestTimeout(30 * time.Second)}, extra...)
	// Each session its own system prompt: a decode worker reuses a
	// session's own KV only (docs/SERVE.md), which a router reading KV
	// events cannot tell from another session's with the same prefix.
	system := "You are coding agent " + id + " in a large repository. " + strings.Repeat("Follow the repository's conventions. ", 40)
	return &session{c: openai.NewClient(opts...), msgs: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(system)}}
}

func (s *session) turn(t *testing.T, user string, maxTokens int) *openai.ChatCompletion {
	s.msgs = append(s.msgs, openai.UserMessage(user))
	r, err := s.c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "pdemu", Messages: s.msgs,
		MaxTokens: openai.Int(int64(maxTokens))})
	require.NoError(t, err)
	require.Len(t, r.Choices, 1)
	s.msgs = append(s.msgs, openai.AssistantMessage(r.Choices[0].Message.Content))
	return r
}

func TestGateway(t *testing.T) {
	// d3's start-up is 20 emulated s, 2 s of wall time at this scale: long
	// enough that its /health is read while it is still starting even on a
	// loaded machine under -race (at 0.2 s it once answered 200 there).
	fu := startFleet(t, fleetserve.Options{TimeScale: 10, StartupFixed: 20 * time.Second})
	require.Len(t, fu.listing.Workers, 4) // p0, d0, d1, d2
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := newGateway(t, ctx, fu.listing.Admin)
	g.listing()
	time.Sleep(300 * time.Millisecond) // ZMQ's slow joiner: let the subscriptions reach the publishers
	gw := httptest.NewServer(g)
	defer gw.Close()

	// Phase 1, prefix-aware and one request at a time: the cached tokens
	// every decode worker reports are what its KV events predicted.
	g.mode.Store("prefix")
	for s := range 4 {
		ss := newSession(gw.URL, fmt.Sprint("agent-", s))
		for turn := range 3 {
			g.caughtUp()
			ss.turn(t, fmt.Sprintf("Session %d, step %d: %s", s, turn, strings.Repeat("read the next file and summarise it. ", 8)), 8)
		}
	}
	g.mu.Lock()
	calls := append([]gwCall(nil), g.calls...)
	g.mu.Unlock()
	require.Len(t, calls, 12)
	direct, handoffs := 0, 0
	for i, c := range calls {
		assert.Equal(t, c.predicted, c.reported, "call %d to %s (hand-off %v)", i, c.decode, c.handoff)
		if c.handoff {
			handoffs++
		} else {
			direct++
			assert.Positive(t, c.reported, "call %d was sent for its prefix", i)
		}
	}
	assert.Equal(t, 4, handoffs, "every session's first turn is handed off")
	assert.Equal(t, 8, direct, "later turns go to the worker that holds the session")

	// Phase 2, round-robin with concurrent sessions; a decode worker is
	// added mid-run and takes load; d0 is drained with requests in flight.
	g.mode.Store("rr")
	var wg sync.WaitGroup
	wave := func(n, turns, maxTokens int, prefix string, extra ...option.RequestOption) {
		for s := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ss := newSession(gw.URL, fmt.Sprintf("%s-%d", prefix, s), extra...)
				for turn := range turns {
					ss.turn(t, fmt.Sprintf("%s %d turn %d: %s", prefix, s, turn, strings.Repeat("run the tests. ", 6)), maxTokens)
				}
			}()
		}
	}
	wave(6, 2, 16, "wave1")
	// Scale up: d3 starts empty, after its start-up delay.
	resp, err := http.Post(fu.listing.Admin+"/admin/workers", "application/json",
		strings.NewReader(`{"action":"add","name":"d3","role":"decode","like":"d1"}`))
	require.NoError(t, err)
	var added fleetserve.Endpoint
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&added))
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, "starting", added.State)
	g.listing() // follow d3's events from the start
	hr, err := http.Get(added.URL + "/health")
	require.NoError(t, err)
	hr.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, hr.StatusCode, "a starting worker is not ready")
	require.Eventually(t, func() bool {
		for _, e := range g.listing().Workers {
			if e.Worker == "d3" && e.State == "ready" {
				return true
			}
		}
		return false
	}, 30*time.Second, 10*time.Millisecond)
	_, ok := gauge(scrape(t, added.URL), "vllm:num_requests_running", "d3")
	assert.True(t, ok, "the new worker's metrics appear")
	wg.Wait()
	wave(8, 2, 16, "wave2")
	wg.Wait()
	assert.Positive(t, g.served("d3"), "the new worker takes load")

	// Drain d0 with requests in flight on it: they all end, then it leaves.
	var d0 fleetserve.Endpoint
	for _, e := range g.listing().Workers {
		if e.Worker == "d0" {
			d0 = e
		}
	}
	before := g.served("d0")
	wave(3, 1, 1000, "long", option.WithHeader("X-Gateway-Decode", "d0"))
	// Wait until d0 holds all three (running or waiting) or has finished
	// some of them, with one still in flight. Waiting for all three
	// running at once raced: on a loaded machine the first could finish
	// before the third was admitted, and the wait timed out.
	var inFlight, done atomic.Int64 // the last poll's, for the failure message
	if !assert.Eventually(t, func() bool {
		m := scrape(t, d0.URL)
		running, _ := gauge(m, "vllm:num_requests_running", "d0")
		waiting, _ := gauge(m, "vllm:num_requests_waiting", "d0")
		inFlight.Store(int64(running + waiting))
		done.Store(int64(g.served("d0") - before))
		return inFlight.Load() >= 1 && inFlight.Load()+done.Load() == 3
	}, 10*time.Second, 5*time.Millisecond) {
		t.Fatalf("d0 never held the long wave: %d in flight, %d done at the last poll", inFlight.Load(), done.Load())
	}
	resp, err = http.Post(fu.listing.Admin+"/admin/workers", "application/json", strings.NewReader(`{"action":"drain","name":"d0"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	wg.Wait()
	assert.Equal(t, before+3, g.served("d0"), "the drained worker finished its requests")
	require.Eventually(t, func() bool {
		for _, e := range g.listing().Workers {
			if e.Worker == "d0" {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		_, err := http.Get(d0.URL + "/metrics")
		return err != nil
	}, 10*time.Second, 10*time.Millisecond, "the drained worker's metrics vanish")

	// The KV events add up to every worker's residency.
	g.quiet()
	fu.stop(t)
	res := fu.res
	for w, blocks := range res.Residency {
		// The last batches may still be on their way to the subscriber.
		assert.Eventually(t, func() bool { return slices.Equal(blocks, g.idx.Blocks(w)) }, 5*time.Second, 5*time.Millisecond,
			"worker %s: KV events vs residency", w)
		assert.Equal(t, nonNil(blocks), nonNil(g.idx.Blocks(w)), "worker %s", w)
	}
	// Its last batch (all blocks cleared) may also be on its way.
	assert.Eventually(t, func() bool { return len(g.idx.Blocks("d0")) == 0 }, 5*time.Second, 5*time.Millisecond,
		"a gone worker holds nothing")
	assert.Zero(t, g.idx.Gaps(), "no KV batch was missed")
	g.mu.Lock()
	for w, s := range g.first {
		assert.Zero(t, s, "worker %s: its first batch has sequence 0", w)
	}
	g.mu.Unlock()
	assert.Zero(t, res.KVDropped)
	assert.Zero(t, res.KVFailed)

	// The outputs: every HTTP request a worker took ended exactly once.
	rr, err := res.RunResult(loadSpec(t))
	require.NoError(t, err)
	sum := rr.Summary.Requests
	assert.Equal(t, sum.Total, sum.Completed, "nothing failed")
	ids := map[int64]bool{}
	var decodes, seeds, prefills int
	for _, r := range rr.Records {
		require.False(t, ids[r.ID], "request %d recorded twice", r.ID)
		ids[r.ID] = true
		switch r.Mode {
		case "Seed":
			seeds++
			decodes++
			assert.Positive(t, r.TransferBytes)
			assert.Equal(t, "p0", r.P)
		case "Direct":
			decodes++
			assert.Zero(t, r.TransferBytes)
		case "Vanilla":
			prefills++
			assert.Equal(t, "p0", r.P)
			assert.Empty(t, r.D)
		}
	}
	g.mu.Lock()
	assert.Equal(t, len(g.calls), decodes, "one decode row per client request")
	g.mu.Unlock()
	assert.Equal(t, seeds, prefills, "one prefill row per hand-off")
	rows, _ := rr.Links.Rows()
	assert.Positive(t, rows, "the KV transfers are in links.csv")
}

func nonNil(b []uint64) []uint64 {
	if b == nil {
		return []uint64{}
	}
	return b
}

func scrape(t *testing.T, url string) string {
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// gauge reads metric{...worker="w"...} from a scrape.
func gauge(scrape, metric, worker string) (float64, bool) {
	for _, line := range strings.Split(scrape, "\n") {
		if !strings.HasPrefix(line, metric+"{") || !strings.Contains(line, `worker="`+worker+`"`) {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
			return v, true
		}
	}
	return 0, false
}

// TestGatewayLoad measures the fleet behind the gateway: N concurrent
// agent sessions (PDEMU_FLEET_LOAD_CLIENTS, default: skipped) of two turns
// each, every turn a P→D hand-off, at time scale 1.
func TestGatewayLoad(t *testing.T) {
	n := 0
	fmt.Sscan(os.Getenv("PDEMU_FLEET_LOAD_CLIENTS"), &n)
	if n <= 0 {
		t.Skip("set PDEMU_FLEET_LOAD_CLIENTS=N to measure N concurrent sessions through the gateway")
	}
	fu := startFleet(t, fleetserve.Options{TimeScale: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := newGateway(t, ctx, fu.listing.Admin)
	g.listing()
	time.Sleep(300 * time.Millisecond)
	gw := httptest.NewServer(g)
	defer gw.Close()
	http.DefaultTransport.(*http.Transport).MaxIdleConnsPerHost = 4 * n
	start := time.Now()
	var wg sync.WaitGroup
	var failed atomic.Int64
	for s := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ss := newSession(gw.URL, fmt.Sprint("load-", s))
			for turn := range 2 {
				ss.msgs = append(ss.msgs, openai.UserMessage(fmt.Sprintf("turn %d: %s", turn, strings.Repeat("fix the bug. ", 10))))
				r, err := ss.c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "pdemu", Messages: ss.msgs, MaxTokens: openai.Int(16)})
				if err != nil {
					failed.Add(1)
					return
				}
				ss.msgs = append(ss.msgs, openai.AssistantMessage(r.Choices[0].Message.Content))
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	g.quiet()
	fu.stop(t)
	rr, err := fu.res.RunResult(loadSpec(t))
	require.NoError(t, err)
	s := rr.Summary
	t.Logf("%d sessions x 2 turns: wall %v, %d worker calls (%d failed), client errors %d, TTFT of all worker calls p50 %.1f ms p99 %.1f ms (a prefill call's is its prefill; a decode call's counts from its own arrival), KV batches %d sent %d dropped",
		n, wall.Round(time.Millisecond), s.Requests.Total, s.Requests.Failed, failed.Load(), s.TTFT.P50, s.TTFT.P99, fu.res.KVSent, fu.res.KVDropped)
	assert.Zero(t, failed.Load())
	assert.Equal(t, s.Requests.Total, s.Requests.Completed)
	assert.Equal(t, 4*n, s.Requests.Total, "a prefill and a decode call per turn")
	for w, blocks := range fu.res.Residency {
		assert.Eventually(t, func() bool { return slices.Equal(blocks, g.idx.Blocks(w)) }, 5*time.Second, 5*time.Millisecond, w)
	}
}

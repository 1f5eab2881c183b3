package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pdemu/pdemu/workload"
)

// Options configure a Server; zero fields take the defaults in brackets.
type Options struct {
	// Listen is the address to bind ["127.0.0.1:8000"]. A non-loopback
	// address is refused unless AllowRemote is set.
	Listen      string
	AllowRemote bool
	// Model is the served model name ["pdemu"]; requests naming another
	// model get 404 model_not_found.
	Model string
	// BlockTokens is the block size of the prompt hashes [24].
	BlockTokens int
	// MaxBodyBytes bounds a request body [8 MiB]; larger bodies get 413.
	MaxBodyBytes int64
	// MaxModelLen bounds prompt + output tokens [131072]; beyond it a
	// request gets 400 context_length_exceeded.
	MaxModelLen int
	// DefaultOutputTokens is the mean of the output length drawn when a
	// request has no max_tokens [150].
	DefaultOutputTokens int
	// MaxInFlight is the admission limit [4096]: a request arriving while
	// that many are in flight gets 429 with Retry-After.
	MaxInFlight int
	// RetryAfter is the Retry-After of a 429, rounded up to seconds [1s].
	RetryAfter time.Duration
	// MaxSessions bounds the session table [1<<20].
	MaxSessions int
	// Timeouts: ReadHeaderTimeout [10s] and ReadTimeout [60s] bound reading a
	// request; WriteTimeout [30s] bounds each write (every SSE chunk gets a
	// fresh deadline, so a stream may last any time but a client that stops
	// reading is dropped after it); IdleTimeout [120s] closes idle
	// keep-alive connections.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	// DrainTimeout bounds the graceful drain of Run [5m]: in-flight requests
	// are served to their end unless it expires.
	DrainTimeout time.Duration
	// Ready, when set, is called by Run with the bound address.
	Ready  func(addr net.Addr)
	Logger hclog.Logger
	// Labels are added to every metric on /metrics (pdemu serve --group
	// sets group).
	Labels map[string]string
}

func (o Options) withDefaults() Options {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defd := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:8000"
	}
	if o.Model == "" {
		o.Model = "pdemu"
	}
	def(&o.BlockTokens, 24)
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 8 << 20
	}
	def(&o.MaxModelLen, 131072)
	def(&o.DefaultOutputTokens, 150)
	def(&o.MaxInFlight, 4096)
	def(&o.MaxSessions, 1<<20)
	defd(&o.RetryAfter, time.Second)
	defd(&o.ReadHeaderTimeout, 10*time.Second)
	defd(&o.ReadTimeout, 60*time.Second)
	defd(&o.WriteTimeout, 30*time.Second)
	defd(&o.IdleTimeout, 120*time.Second)
	defd(&o.DrainTimeout, 5*time.Minute)
	if o.Logger == nil {
		o.Logger = hclog.New(&hclog.LoggerOptions{Name: "pdemu-serve", Level: hclog.Warn})
	}
	return o
}

// CheckListen refuses a non-loopback listen address unless allowRemote.
func CheckListen(addr string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("serve: listen address %q: %v", addr, err)
	}
	if allowRemote {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("serve: listen address %q is not a loopback address; pass the explicit remote flag to expose the emulator beyond this machine", addr)
	}
	return nil
}

// Server is the HTTP front end of one cluster.
type Server struct {
	opts     Options
	cl       Cluster
	sess     *sessions
	met      *Metrics
	mux      *http.ServeMux
	inflight atomic.Int64
	draining atomic.Bool
	created  int64

	mu  sync.Mutex
	srv *http.Server
}

// New returns a server in front of cl.
func New(opts Options, cl Cluster) (*Server, error) {
	if cl == nil {
		return nil, errors.New("serve: no cluster")
	}
	opts = opts.withDefaults()
	if err := CheckListen(opts.Listen, opts.AllowRemote); err != nil {
		return nil, err
	}
	s := &Server{opts: opts, cl: cl, sess: newSessions(opts.MaxSessions), created: time.Now().Unix()}
	s.met = NewMetricsWith(opts.Model, cl.Snapshot, opts.Labels)
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("/v1/chat/completions", s.post(s.chat))
	s.mux.HandleFunc("/v1/completions", s.post(s.completion))
	s.mux.HandleFunc("/v1/models", s.get(s.models))
	s.mux.HandleFunc("/health", s.get(s.health))
	s.mux.Handle("/metrics", s.get(s.met.Handler().ServeHTTP))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error",
			Message: fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path), Code: strp("not_found")})
	})
	return s, nil
}

// Metrics returns the server's metrics (for tests and for embedding).
func (s *Server) Metrics() *Metrics { return s.met }

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.mux }

// HTTPServer returns the http.Server Serve uses, with the timeouts set.
func (s *Server) httpServer() *http.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		s.srv = &http.Server{
			Handler:           s.mux,
			ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
			ReadTimeout:       s.opts.ReadTimeout,
			IdleTimeout:       s.opts.IdleTimeout,
			MaxHeaderBytes:    64 << 10,
			ErrorLog:          s.opts.Logger.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
		}
	}
	return s.srv
}

// Serve serves on l until Shutdown (it then returns http.ErrServerClosed).
func (s *Server) Serve(l net.Listener) error { return s.httpServer().Serve(l) }

// Shutdown drains: new requests get 503, the listener closes, and it
// returns when every in-flight request has ended (or ctx expires). Once
// none is in flight, connections still open (idle keep-alives, and ones a
// client opened but never used, which http.Server.Shutdown would wait 5 s
// for) are closed.
func (s *Server) Shutdown(ctx context.Context) error {
	s.draining.Store(true)
	srv := s.httpServer()
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(ctx) }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			if s.InFlight() == 0 {
				_ = srv.Close()
				return <-done
			}
		}
	}
}

// InFlight is the number of requests admitted and not yet ended.
func (s *Server) InFlight() int { return int(s.inflight.Load()) }

// Run listens on opts.Listen and serves cl until ctx is done, then drains
// (see Shutdown) within opts.DrainTimeout.
func Run(ctx context.Context, opts Options, cl Cluster) error {
	s, err := New(opts, cl)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", s.opts.Listen)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if s.opts.Ready != nil {
		s.opts.Ready(l.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	dctx, cancel := context.WithTimeout(context.Background(), s.opts.DrainTimeout)
	defer cancel()
	if err := s.Shutdown(dctx); err != nil {
		return fmt.Errorf("serve: drain: %w (%d requests still in flight)", err, s.InFlight())
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// ---------------------------------------------------------------- plumbing

func (s *Server) fail(w http.ResponseWriter, e *apiError) {
	code := ""
	if e.Code != nil {
		code = *e.Code
	}
	s.met.httpErrors.WithLabelValues(strconv.Itoa(e.Status), code).Inc()
	w.Header().Set("Content-Type", "application/json")
	if e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", strconv.Itoa(int((s.opts.RetryAfter+time.Second-1)/time.Second)))
	}
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(struct {
		Error *apiError `json:"error"`
	}{e})
}

func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	s.fail(w, &apiError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error",
		Message: fmt.Sprintf("%s %s: method not allowed (use %s)", r.Method, r.URL.Path, allow), Code: strp("method_not_allowed")})
}

func (s *Server) get(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			s.methodNotAllowed(w, r, "GET")
			return
		}
		h(w, r)
	}
}

// post admits a request, reads its body within the limits and hands it to h.
func (s *Server) post(h func(w http.ResponseWriter, r *http.Request, body []byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			s.methodNotAllowed(w, r, "POST")
			return
		}
		if s.draining.Load() {
			w.Header().Set("Connection", "close")
			s.fail(w, &apiError{Status: http.StatusServiceUnavailable, Type: "server_error",
				Message: "the server is shutting down", Code: strp("shutting_down")})
			return
		}
		if n := s.inflight.Add(1); n > int64(s.opts.MaxInFlight) {
			s.inflight.Add(-1)
			s.fail(w, &apiError{Status: http.StatusTooManyRequests, Type: "rate_limit_error",
				Message: fmt.Sprintf("too many requests in flight (admission limit %d); retry later", s.opts.MaxInFlight),
				Code:    strp("rate_limit_exceeded")})
			return
		}
		s.met.inflight.Inc()
		defer func() {
			s.inflight.Add(-1)
			s.met.inflight.Dec()
		}()
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
		if err != nil {
			var mb *http.MaxBytesError
			if errors.As(err, &mb) {
				s.fail(w, &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error",
					Message: fmt.Sprintf("request body exceeds %d bytes", mb.Limit), Code: strp("request_too_large")})
				return
			}
			s.fail(w, badRequest("", "", "reading the request body: %v", err))
			return
		}
		// The body is read: lift the read deadline, or a long stream would
		// see its context cancelled when ReadTimeout expires.
		_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
		h(w, r, body)
	}
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	status := http.StatusOK
	state := "ok"
	if s.draining.Load() {
		status, state = http.StatusServiceUnavailable, "draining"
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"status": state, "in_flight": s.InFlight()})
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"object": "list",
		"data": []map[string]any{{
			"id": s.opts.Model, "object": "model", "created": s.created, "owned_by": "pdemu",
			"max_model_len": s.opts.MaxModelLen,
		}},
	})
}

// ---------------------------------------------------------------- requests

// call is one parsed request, ready for the cluster.
type call struct {
	chat         bool
	model        string
	text         string // the serialised prompt
	sessionKey   string
	maxTokens    *int
	stream       bool
	includeUsage bool
}

func (s *Server) checkCommon(model string, n *int) *apiError {
	if model == "" {
		return badRequest("model", "", "model is missing (this server serves %q)", s.opts.Model)
	}
	if model != s.opts.Model {
		return &apiError{Status: http.StatusNotFound, Type: "invalid_request_error",
			Message: fmt.Sprintf("the model %q does not exist (this server serves %q)", model, s.opts.Model),
			Param:   strp("model"), Code: strp("model_not_found")}
	}
	if n != nil && *n != 1 {
		return badRequest("n", "", "n must be 1 (got %d)", *n)
	}
	return nil
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request, body []byte) {
	var req chatRequest
	if e := decodeJSON(body, &req); e != nil {
		s.fail(w, e)
		return
	}
	if e := s.checkCommon(req.Model, req.N); e != nil {
		s.fail(w, e)
		return
	}
	msgs, e := req.messages()
	if e != nil {
		s.fail(w, e)
		return
	}
	c := call{chat: true, model: req.Model, text: chatTemplate(msgs), maxTokens: req.MaxTokens}
	if req.MaxCompletionTokens != nil {
		c.maxTokens = req.MaxCompletionTokens
	}
	c.stream = req.Stream != nil && *req.Stream
	c.includeUsage = req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	c.sessionKey = sessionKey(r, req.User, func() string {
		// The conversation's opening: every message up to and including
		// the first user message.
		for i, m := range msgs {
			if m.Role == "user" {
				return chatTemplate(msgs[:i+1])
			}
		}
		return chatTemplate(msgs[:1])
	})
	s.serve(w, r, c)
}

func (s *Server) completion(w http.ResponseWriter, r *http.Request, body []byte) {
	var req completionRequest
	if e := decodeJSON(body, &req); e != nil {
		s.fail(w, e)
		return
	}
	if e := s.checkCommon(req.Model, req.N); e != nil {
		s.fail(w, e)
		return
	}
	text, e := promptText(req.Prompt)
	if e != nil {
		s.fail(w, e)
		return
	}
	c := call{model: req.Model, text: text, maxTokens: req.MaxTokens}
	c.stream = req.Stream != nil && *req.Stream
	c.includeUsage = req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	c.sessionKey = sessionKey(r, req.User, func() string {
		// A bare prompt's opening: its first 16 blocks' worth of bytes.
		return text[:min(len(text), 16*24*BytesPerToken)]
	})
	s.serve(w, r, c)
}

// sessionKey is X-Session-Id, else the user field, else the conversation's
// opening (hashed).
func sessionKey(r *http.Request, user *string, opening func() string) string {
	if h := r.Header.Get("X-Session-Id"); h != "" {
		return "h:" + h
	}
	if user != nil && *user != "" {
		return "u:" + *user
	}
	return fmt.Sprintf("p:%016x", hashString(opening()))
}

// serve builds the request, submits it and relays its events.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, c call) {
	in := TokenCount(len(c.text))
	if in == 0 {
		s.fail(w, badRequest("prompt", "", "the prompt is empty"))
		return
	}
	finish := "stop"
	var out int
	if c.maxTokens != nil {
		if *c.maxTokens < 1 {
			s.fail(w, badRequest("max_tokens", "", "max_tokens must be at least 1 (got %d)", *c.maxTokens))
			return
		}
		out, finish = *c.maxTokens, "length"
	} else {
		out = min(defaultOutputLen(s.opts.DefaultOutputTokens, hashString(c.text)), max(1, s.opts.MaxModelLen-in))
	}
	if in+out > s.opts.MaxModelLen {
		s.fail(w, badRequest("messages", "context_length_exceeded",
			"this model's maximum context length is %d tokens; the request has %d prompt tokens (≈ %d bytes / %d) and asks for %d output tokens",
			s.opts.MaxModelLen, in, len(c.text), BytesPerToken, out))
		return
	}
	salt := hashString("model:" + c.model)
	req := s.sess.build(c.sessionKey, in, out, blockHashes(c.text, s.opts.BlockTokens, salt), s.opts.BlockTokens)
	events, err := s.cl.Submit(r.Context(), req)
	if err != nil {
		s.fail(w, &apiError{Status: http.StatusServiceUnavailable, Type: "server_error",
			Message: "the cluster did not accept the request: " + err.Error(), Code: strp("cluster_unavailable")})
		return
	}
	rl := &relay{s: s, w: w, r: r, c: c, req: req, finish: finish, seed: hashString(c.text) ^ uint64(req.ID)}
	rl.run(events)
}

// relay writes one request's events to its client and records them.
type relay struct {
	s      *Server
	w      http.ResponseWriter
	r      *http.Request
	c      call
	req    *workload.Request
	finish string
	seed   uint64

	rc       *http.ResponseController
	started  bool // response headers written
	gone     bool // the client went away or stopped reading
	prev     time.Duration
	first    Event
	produced int
}

func (rl *relay) id() string {
	if rl.c.chat {
		return fmt.Sprintf("chatcmpl-pdemu-%d", rl.req.ID)
	}
	return fmt.Sprintf("cmpl-pdemu-%d", rl.req.ID)
}

func (rl *relay) object() string {
	switch {
	case rl.c.chat && rl.c.stream:
		return "chat.completion.chunk"
	case rl.c.chat:
		return "chat.completion"
	}
	return "text_completion"
}

func (rl *relay) base() response {
	return response{ID: rl.id(), Object: rl.object(), Created: rl.s.created, Model: rl.c.model, SystemFingerprint: "pdemu"}
}

// run consumes every event to the end, whatever happens to the client.
func (rl *relay) run(events <-chan Event) {
	rl.rc = http.NewResponseController(rl.w)
	var end Event
	for ev := range events {
		switch ev.Kind {
		case EvToken:
			rl.s.met.Token(ev, rl.prev)
			rl.prev = ev.Since
			if ev.Index == 0 {
				rl.first = ev
			}
			rl.produced++
			if rl.c.stream {
				// Flush when nothing else is pending: a burst of due
				// tokens goes out in one write.
				rl.chunk(fillerToken(rl.seed, ev.Index), ev.Index == 0, len(events) == 0)
			}
		case EvDone, EvFailed:
			end = ev
		}
	}
	if !rl.gone {
		select {
		case <-rl.r.Context().Done():
			rl.gone = true
		default:
		}
	}
	switch end.Kind {
	case EvDone:
		rl.s.met.Done(end, rl.req.InputLen, rl.req.OutputLen, rl.finish)
		rl.done(end)
	case EvFailed:
		rl.s.met.Failed(end.Reason)
		rl.failed(end)
	default:
		// The cluster closed the channel without an end: its contract is
		// broken; report it rather than hang or pretend.
		rl.s.met.Failed("no-end-event")
		rl.failed(Event{Kind: EvFailed, Reason: "the cluster ended the request without a result"})
	}
	if rl.gone {
		rl.s.met.disconnects.Inc()
	}
}

func (rl *relay) deadline() {
	_ = rl.rc.SetWriteDeadline(time.Now().Add(rl.s.opts.WriteTimeout))
}

func (rl *relay) startStream() {
	if rl.started {
		return
	}
	rl.started = true
	h := rl.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	rl.deadline()
	rl.w.WriteHeader(http.StatusOK)
}

// sse writes one data: line and flushes it.
func (rl *relay) sse(v any) { rl.write(v, true) }

// write writes one data: line, flushing it if flush is set.
func (rl *relay) write(v any, flush bool) {
	if rl.gone {
		return
	}
	select {
	case <-rl.r.Context().Done():
		rl.gone = true
		return
	default:
	}
	rl.startStream()
	var b []byte
	if s, ok := v.(string); ok {
		b = []byte(s)
	} else {
		b, _ = json.Marshal(v)
	}
	rl.deadline()
	if _, err := fmt.Fprintf(rl.w, "data: %s\n\n", b); err != nil {
		rl.gone = true
		return
	}
	if !flush {
		return
	}
	if err := rl.rc.Flush(); err != nil {
		rl.gone = true
	}
}

func (rl *relay) chunk(text string, first, flush bool) {
	resp := rl.base()
	ch := chatChoice{Index: 0}
	if rl.c.chat {
		ch.Delta = &chatOut{Content: &text}
		if first {
			ch.Delta.Role = "assistant"
		}
	} else {
		ch.Text = &text
	}
	resp.Choices = []chatChoice{ch}
	rl.write(resp, flush)
}

func (rl *relay) info(end Event) *pdemuInfo {
	return &pdemuInfo{Session: rl.req.SessionName, Turn: rl.req.Turn, Mode: end.Mode, Worker: end.Worker,
		Prefill: end.Prefill, TTFT: rl.first.Since.Seconds(), E2E: end.Since.Seconds(), AppendLen: rl.req.AppendLen}
}

func (rl *relay) usage(end Event) *usage {
	return &usage{PromptTokens: rl.req.InputLen, CompletionTokens: rl.produced,
		TotalTokens: rl.req.InputLen + rl.produced, PromptTokensDetails: promptDetail{CachedTokens: end.CachedTokens}}
}

func (rl *relay) done(end Event) {
	finish := rl.finish
	if rl.c.stream {
		resp := rl.base()
		ch := chatChoice{Index: 0, FinishReason: &finish}
		empty := ""
		if rl.c.chat {
			ch.Delta = &chatOut{}
		} else {
			ch.Text = &empty
		}
		resp.Choices = []chatChoice{ch}
		resp.Pdemu = rl.info(end)
		rl.sse(resp)
		if rl.c.includeUsage {
			u := rl.base()
			u.Choices = []chatChoice{}
			u.Usage = rl.usage(end)
			rl.sse(u)
		}
		rl.sse("[DONE]")
		return
	}
	if rl.gone {
		return
	}
	text := fillerText(rl.seed, rl.produced)
	resp := rl.base()
	ch := chatChoice{Index: 0, FinishReason: &finish}
	if rl.c.chat {
		ch.Message = &chatOut{Role: "assistant", Content: &text}
	} else {
		ch.Text = &text
	}
	resp.Choices = []chatChoice{ch}
	resp.Usage = rl.usage(end)
	resp.Pdemu = rl.info(end)
	rl.w.Header().Set("Content-Type", "application/json")
	rl.deadline()
	if err := json.NewEncoder(rl.w).Encode(resp); err != nil {
		rl.gone = true
	}
}

func (rl *relay) failed(end Event) {
	e := &apiError{Status: http.StatusInternalServerError, Type: "server_error",
		Message: "the emulated cluster failed the request: " + end.Reason, Code: strp("request_failed")}
	switch {
	case end.Reason == "exceeds-kv-pool":
		e.Status, e.Type, e.Code = http.StatusBadRequest, "invalid_request_error", strp("context_length_exceeded")
		e.Message = "the request does not fit in a decode worker's KV pool (exceeds-kv-pool)"
	case end.Fault:
		// A crash or a cut link lost it and the retries did not save it:
		// what a client of a real fleet sees when its replica dies.
		e.Status, e.Code = http.StatusServiceUnavailable, strp("service_unavailable")
		e.Message = "the emulated cluster lost the request to a fault; retry: " + end.Reason
	}
	if rl.started {
		// Mid-stream: the status is sent; report the error as an event.
		rl.sse(struct {
			Error *apiError `json:"error"`
		}{e})
		rl.sse("[DONE]")
		return
	}
	if rl.gone {
		return
	}
	rl.deadline()
	rl.s.fail(rl.w, e)
}

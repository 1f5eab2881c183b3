package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
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
	// request gets 400 context_length_exceeded (vLLM's message). /v1/models
	// reports it as max_model_len: set it to what the cluster admits
	// (package served sets the largest request a decode pool holds).
	MaxModelLen int
	// DefaultOutputTokens is the mean of the output length drawn when a
	// request has no max_tokens [150].
	DefaultOutputTokens int
	// MaxInFlight is the admission limit [4096]: a request arriving while
	// that many are in flight gets 429 with Retry-After.
	MaxInFlight int
	// RetryAfter is the Retry-After of a 429, rounded up to seconds [1s].
	RetryAfter time.Duration
	// MaxSessions bounds the session table [1<<16]: a session key unused
	// for that many newer sessions is forgotten (its KV may still be
	// cached: a prompt that extends it is a prefix-cache hit).
	// Each remembered session costs ~100 bytes.
	MaxSessions int
	// SessionTTL, when > 0, also forgets a session key unused for longer
	// than that (wall time) [0: only MaxSessions bounds the table]; pdemu
	// serve sets it to the router's session TTL scaled to wall time.
	SessionTTL time.Duration
	// Timeouts: ReadHeaderTimeout [10s] bounds reading a request's
	// headers and ReadTimeout [10s] its body (a client that stalls
	// mid-body gets 408 once it passes; the body is read before admission,
	// so a stalled body never holds one of MaxInFlight's slots);
	// WriteTimeout [30s] bounds each write (every SSE chunk gets a fresh
	// deadline, so a stream may last any time but a client that stops
	// reading is dropped after it); IdleTimeout [120s] closes idle
	// keep-alive connections.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	// DrainTimeout bounds the graceful drain of Run [5m]: in-flight requests
	// are served to their end unless it expires.
	DrainTimeout time.Duration
	// ExtraParams are request parameters the embedding front end reads
	// itself (fleetserve: kv_transfer_params); the server accepts them.
	// Every other parameter not in its table is refused (params.go).
	ExtraParams []string
	// Ready, when set, is called by Run with the bound address.
	Ready func(addr net.Addr)
	// Listener, when set, is what Run serves on instead of listening on
	// Listen itself: a caller that binds first can fail before it starts
	// anything else (served binds before its cluster runs).
	Listener net.Listener
	Logger   hclog.Logger
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
	def(&o.MaxSessions, 1<<16)
	defd(&o.RetryAfter, time.Second)
	defd(&o.ReadHeaderTimeout, 10*time.Second)
	defd(&o.ReadTimeout, 10*time.Second)
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
		return fmt.Errorf("serve: listen address %q is not a loopback address; pass --allow-remote to expose the emulator beyond this machine (anyone who can reach it can use it)", addr)
	}
	return nil
}

// Server is the HTTP front end of one cluster.
type Server struct {
	opts Options
	cl   Cluster
	sess *sessions
	met  *Metrics
	mux  *http.ServeMux
	// inflight counts the requests admitted whose answer is not yet
	// written (the admission limit); active the handlers of admitted
	// requests still running (the drain waits for both).
	inflight atomic.Int64
	active   atomic.Int64
	draining atomic.Bool
	created  int64
	// launch salts this process's request ids and text seeds (random at
	// New), seq counts its requests: ids are unique across launches.
	launch uint64
	seq    atomic.Uint64

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
	s := &Server{opts: opts, cl: cl, sess: newSessions(opts.MaxSessions, opts.SessionTTL), created: time.Now().Unix(), launch: rand.Uint64()}
	s.met = NewMetricsWith(opts.Model, cl.Snapshot, opts.Labels)
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("/v1/chat/completions", s.post(s.chat))
	s.mux.HandleFunc("/v1/completions", s.post(s.completion))
	s.mux.HandleFunc("/v1/models", s.get(s.models))
	s.mux.HandleFunc("/v1/models/{id...}", s.get(s.model))
	s.mux.HandleFunc("/tokenize", s.post(s.tokenize))
	s.mux.HandleFunc("/detokenize", s.post(s.detokenize))
	s.mux.HandleFunc("/health", s.get(s.health))
	s.mux.HandleFunc("/health/ready", s.get(s.health))
	s.mux.Handle("/metrics", s.get(s.met.Handler().ServeHTTP))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.requestID(w, r)
		s.fail(w, &apiError{Status: http.StatusNotFound,
			Message: fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path), Reason: "not_found"})
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
			// The body's deadline is set per request (post), so that a
			// stream is not cut when a connection-wide deadline expires.
			IdleTimeout:    s.opts.IdleTimeout,
			MaxHeaderBytes: 64 << 10,
			ErrorLog:       s.opts.Logger.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
		}
	}
	return s.srv
}

// Serve serves on l until Shutdown (it then returns http.ErrServerClosed).
func (s *Server) Serve(l net.Listener) error { return s.httpServer().Serve(l) }

// Shutdown drains like a real server: while requests are in flight the
// listener stays open and every new request, /health and /health/ready
// included, gets 503 with Retry-After (a load balancer takes the replica
// out; a client retries elsewhere) and Connection: close; once none is
// in flight (or ctx expires) the server closes, connections still open
// included (idle keep-alives, and ones a client opened but never used,
// which http.Server.Shutdown would wait 5 s for).
func (s *Server) Shutdown(ctx context.Context) error {
	s.draining.Store(true)
	srv := s.httpServer()
	srv.SetKeepAlivesEnabled(false)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for s.InFlight() > 0 || s.active.Load() > 0 {
		select {
		case <-ctx.Done():
			_ = srv.Close()
			return ctx.Err()
		case <-tick.C:
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && ctx.Err() == nil {
		// Only requests that take no admission slot (a scrape, a health
		// check) can still be running: they are cut.
		_ = srv.Close()
	}
	return ctx.Err()
}

// InFlight is the number of requests admitted and not yet ended.
func (s *Server) InFlight() int { return int(s.inflight.Load()) }

// Listen binds addr for Run (Options.Listener); the error names the
// address, as Run's own listen does.
func Listen(addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	return l, nil
}

// Run listens on opts.Listen (or serves opts.Listener) and serves cl until ctx is done, then drains
// (see Shutdown) within opts.DrainTimeout.
func Run(ctx context.Context, opts Options, cl Cluster) error {
	s, err := New(opts, cl)
	if err != nil {
		return err
	}
	l := s.opts.Listener
	if l == nil {
		if l, err = Listen(s.opts.Listen); err != nil {
			return err
		}
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
	s.met.httpErrors.WithLabelValues(strconv.Itoa(e.Status), e.Reason).Inc()
	w.Header().Set("Content-Type", "application/json")
	if e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", strconv.Itoa(int((s.opts.RetryAfter+time.Second-1)/time.Second)))
	}
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(e.envelope())
}

func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	s.fail(w, &apiError{Status: http.StatusMethodNotAllowed,
		Message: fmt.Sprintf("%s %s: method not allowed (use %s)", r.Method, r.URL.Path, allow), Reason: "method_not_allowed"})
}

// requestID puts r's X-Request-Id on the response, or a generated one
// (then also on r, for the handler): every response has one, errors
// included (the OpenAI SDKs report it as an error's request id).
func (s *Server) requestID(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("X-Request-Id")
	if id == "" {
		id = s.newID()
		r.Header.Set("X-Request-Id", id)
	}
	w.Header().Set("X-Request-Id", id)
}

func (s *Server) get(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.requestID(w, r)
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
		r = withArrival(r) // a client's TTFT counts from here
		s.requestID(w, r)
		if r.Method != http.MethodPost {
			s.methodNotAllowed(w, r, "POST")
			return
		}
		if s.draining.Load() {
			s.unavailable(w)
			return
		}
		// Read the body before admission, within ReadTimeout: a client
		// that stalls mid-body holds no admission slot, and is cut.
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(s.opts.ReadTimeout))
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
		if err != nil {
			var mb *http.MaxBytesError
			var ne net.Error
			switch {
			case errors.As(err, &mb):
				s.fail(w, &apiError{Status: http.StatusRequestEntityTooLarge,
					Message: fmt.Sprintf("request body exceeds %d bytes", mb.Limit), Reason: "request_too_large"})
			case errors.As(err, &ne) && ne.Timeout():
				w.Header().Set("Connection", "close")
				s.fail(w, &apiError{Status: http.StatusRequestTimeout,
					Message: fmt.Sprintf("the request body was not received within %v", s.opts.ReadTimeout), Reason: "request_timeout"})
			default:
				s.fail(w, badRequest("", "", "reading the request body: %v", err))
			}
			return
		}
		// The body is read: lift the read deadline, or a long stream would
		// see its context cancelled when it expires.
		_ = rc.SetReadDeadline(time.Time{})
		if ct := r.Header.Get("Content-Type"); !jsonContentType(ct) {
			s.fail(w, &apiError{Status: http.StatusUnsupportedMediaType,
				Message: fmt.Sprintf("Content-Type must be application/json, got %q", ct), Reason: "unsupported_media_type"})
			return
		}
		if s.draining.Load() { // the drain began while the body was read
			s.unavailable(w)
			return
		}
		if n := s.inflight.Add(1); n > int64(s.opts.MaxInFlight) {
			s.inflight.Add(-1)
			s.fail(w, &apiError{Status: http.StatusTooManyRequests, Message: fmt.Sprintf("too many requests in flight (admission limit %d); retry later", s.opts.MaxInFlight),
				Reason: "rate_limit_exceeded"})
			return
		}
		s.met.inflight.Inc()
		s.active.Add(1)
		// The slot is free once the answer is written (the relay calls
		// release then), not when the handler returns: a client that got
		// its data: [DONE] and sends its next request at once must not
		// find its own finished request still holding the slot.
		var released atomic.Bool
		release := func() {
			if released.CompareAndSwap(false, true) {
				s.inflight.Add(-1)
				s.met.inflight.Dec()
			}
		}
		defer func() {
			release()
			s.active.Add(-1)
		}()
		h(w, r.WithContext(context.WithValue(r.Context(), releaseKey{}, release)), body)
	}
}

// unavailable answers a request that arrives while the server drains.
func (s *Server) unavailable(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	s.fail(w, &apiError{Status: http.StatusServiceUnavailable, Message: "the server is shutting down; retry on another replica", Reason: "shutting_down"})
}

// jsonContentType accepts no Content-Type, application/json and
// application/*+json (with parameters), as vLLM's FastAPI front end
// parses a body as JSON; anything else (curl -d's default
// application/x-www-form-urlencoded included) is refused with 415.
func jsonContentType(ct string) bool {
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	status := http.StatusOK
	state := "ok"
	if s.draining.Load() {
		status, state = http.StatusServiceUnavailable, "draining"
		w.Header().Set("Retry-After", strconv.Itoa(int((s.opts.RetryAfter+time.Second-1)/time.Second)))
		w.Header().Set("Connection", "close")
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"status": state, "in_flight": s.InFlight()})
}

func (s *Server) modelCard() map[string]any {
	return map[string]any{"id": s.opts.Model, "object": "model", "created": s.created, "owned_by": "pdemu",
		"root": s.opts.Model, "parent": nil, "max_model_len": s.opts.MaxModelLen}
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []map[string]any{s.modelCard()}})
}

// model is GET /v1/models/{id}: the model's card, or 404.
func (s *Server) model(w http.ResponseWriter, r *http.Request) {
	if id := r.PathValue("id"); id != s.opts.Model {
		s.fail(w, &apiError{Status: http.StatusNotFound,
			Message: fmt.Sprintf("the model %q does not exist (this server serves %q)", id, s.opts.Model),
			Param:   strp("model"), Reason: "model_not_found"})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s.modelCard())
}

// newID is a request id unique across launches: the launch's salt and
// the request's sequence number.
func (s *Server) newID() string {
	return fmt.Sprintf("pdemu-%016x-%d", s.launch, s.seq.Add(1))
}

package fleetserve

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/fleet"
	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/kvevents"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/serve"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/workload"
)

// PortRange is a range of TCP ports [First, Last]; the zero value picks a
// free port for each listener.
type PortRange struct{ First, Last int }

// Options configure Run; zero fields take the defaults in brackets.
type Options struct {
	// Admin is the admin API's address ["127.0.0.1:8000"]; its host is
	// also the workers' host.
	Admin       string
	AllowRemote bool
	// Ports are the workers' HTTP ports, one per worker in listing order
	// (scenario's prefill workers, then decode workers, then added ones);
	// KVPorts their KV-events ports. The zero range picks free ports.
	Ports, KVPorts PortRange
	// TimeScale: emulated = wall × TimeScale [the scenario's, or 1].
	TimeScale float64
	// Model served by every worker ["pdemu"].
	Model string
	// MaxInFlight per worker [4096].
	MaxInFlight int
	// HoldTimeout: how long a prefill worker keeps a hand-off's KV
	// [fleet.DefaultHoldTimeout].
	HoldTimeout time.Duration
	// Startup of an added worker: StartupFixed + the weights of one GPU
	// over WeightsBandwidth bytes/s (0: no load time). docs/MODEL.md.
	StartupFixed     time.Duration
	WeightsBandwidth float64
	// EndpointsFile, when set, gets the listing (JSON), rewritten on every
	// change.
	EndpointsFile string
	// Ready is called once every endpoint listens, with the listing.
	Ready func(Listing)
	// DrainTimeout bounds the final drain [5m].
	DrainTimeout time.Duration
	Logger       hclog.Logger
}

// Endpoint is one worker in the listing.
type Endpoint struct {
	Worker   string `json:"worker"`
	Role     string `json:"role"`
	URL      string `json:"url"`
	KVEvents string `json:"kv_events"`
	KVTopic  string `json:"kv_topic"`
	EngineID string `json:"engine_id"`
	State    string `json:"state"`
	GPU      string `json:"gpu"`
	Model    string `json:"model"`
}

// Listing is the machine-readable list of endpoints.
type Listing struct {
	Model    string     `json:"model"`
	Admin    string     `json:"admin"`
	Workers  []Endpoint `json:"workers"`
	Emulated float64    `json:"emulated_seconds"`
}

// Result is a served run's outcome.
type Result struct {
	Jobs    []*gpu.Job            // every ended request, in end order
	Prefill []string              // worker names by role index (the jobs' P)
	Decode  []string              // (the jobs' D)
	Links   *metrics.LinkRecorder // links.csv: the KV transfers' load on every NIC
	End     time.Duration
	Wall    time.Duration
	Scale   float64
	// Partial: the final drain timed out; Unfinished requests never ended
	// (InFlight: their jobs, for per_request.csv's unfinished rows).
	Partial    bool
	Unfinished int
	InFlight   []*gpu.Job
	// Residency is every listed worker's KV blocks at the end, by its own
	// state (what its KV events add up to; fleet.Fleet.Residency).
	Residency map[string][]uint64
	// Clients is what each request's HTTP client saw (by request id; the
	// relays report it as cluster mode's do): per_request.csv's client
	// columns (Write).
	Clients map[int64]metrics.ClientTimes
	// KV events published, dropped (queue full) and failed, summed over
	// the workers.
	KVSent, KVDropped, KVFailed int64

	br *serve.Bridge // the lateness clients saw (RunResult: summary.json served)
}

type endpoint struct {
	name    string
	role    fleet.Role
	srv     *serve.Server
	httpSrv *http.Server
	ln      net.Listener
	url     string
	pub     *kvevents.Publisher
	topic   string
	state   fleet.State
	gone    chan struct{} // closed when its server stopped
}

// ticket carries a request's hand-off fields between the HTTP handler and
// the driver.
type ticket struct {
	mu           sync.Mutex
	remoteDecode bool
	pull         *fleet.Handoff
	handoff      *fleet.Handoff // the prefill's result
}

type ticketKey struct{}

type fleetServer struct {
	opts  Options
	spec  *topology.Spec
	log   hclog.Logger
	scale float64
	host  string
	bt    int

	mu        sync.Mutex
	f         *fleet.Fleet
	br        *serve.Bridge
	start     time.Time
	eps       map[string]*endpoint
	order     []string
	tickets   map[int64]*ticket
	reqs      map[int64]*workload.Request
	sessions  map[string]int32 // worker/local session → fleet session
	jobs      []*gpu.Job
	links     *metrics.LinkRecorder
	linkSeen  map[string]metrics.LinkID // links that were active once, by name
	nextPort  int
	nextKV    int
	closing   bool
	admitted  int64
	ended     int64
	wake      chan struct{}
	kvTotals  [3]int64
	wg        sync.WaitGroup
	adminURL  string
	serveOpts serve.Options
	perfs     sync.Map // worker name → gpu.Perf (the Bridge's step guess)

	cmu     sync.Mutex                    // clients' (the relays report on HTTP goroutines)
	clients map[int64]metrics.ClientTimes // what each request's client saw (Result.Clients)
}

// Run serves spec's workers until ctx is done, then drains every worker
// (new requests get 503, requests in flight run to their end) and returns
// the outputs.
func Run(ctx context.Context, spec *topology.Spec, o Options) (*Result, error) {
	if o.Admin == "" {
		o.Admin = "127.0.0.1:8000"
	}
	if err := serve.CheckListen(o.Admin, o.AllowRemote); err != nil {
		return nil, err
	}
	if o.Model == "" {
		o.Model = "pdemu"
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 5 * time.Minute
	}
	log := o.Logger
	if log == nil {
		log = hclog.New(&hclog.LoggerOptions{Name: "pdemu-fleet", Level: hclog.Warn})
	}
	scale := o.TimeScale
	if scale <= 0 {
		scale = spec.Workload.TimeScale
	}
	if scale <= 0 {
		scale = 1
	}
	s := &fleetServer{opts: o, spec: spec, log: log, scale: scale, bt: 24,
		eps: map[string]*endpoint{}, tickets: map[int64]*ticket{}, reqs: map[int64]*workload.Request{},
		sessions: map[string]int32{}, links: metrics.NewLinkRecorder(), linkSeen: map[string]metrics.LinkID{}, wake: make(chan struct{}, 1),
		nextPort: o.Ports.First, nextKV: o.KVPorts.First, clients: map[int64]metrics.ClientTimes{}}
	s.host, _ = portOf(o.Admin)
	f, err := fleet.New(spec, fleet.Options{HoldTimeout: o.HoldTimeout, Startup: s.startup})
	if err != nil {
		return nil, err
	}
	s.f = f
	s.br = serve.NewBridge(serve.BridgeOptions{TimeScale: scale, StepGuess: func(worker string, r *workload.Request) time.Duration {
		// Called with s.mu held (from dispatch): the cost models are
		// cached apart.
		if p, ok := s.perfs.Load(worker); ok {
			return p.(gpu.Perf).DecodeStepTime(1, int64(r.InputLen))
		}
		return 20 * time.Millisecond
	}})
	s.br.SetClientSink(func(id int64, c metrics.ClientTimes) {
		s.cmu.Lock()
		s.clients[id] = c
		s.cmu.Unlock()
	})
	s.serveOpts = serve.Options{Model: o.Model, MaxInFlight: o.MaxInFlight, AllowRemote: o.AllowRemote, Logger: log,
		BlockTokens: s.bt, DrainTimeout: o.DrainTimeout, ExtraParams: []string{"kv_transfer_params"}}

	// Admin first (a busy port fails before anything starts), then the
	// workers, then the clock.
	adminLn, err := net.Listen("tcp", o.Admin)
	if err != nil {
		return nil, fmt.Errorf("fleet admin: %w", err)
	}
	s.adminURL = "http://" + adminLn.Addr().String()
	// Emulated time 0 is now: the workers serve from the moment they
	// listen.
	s.start = time.Now()
	s.br.Attach(s.emulated)
	var startErr error
	for _, wi := range f.Workers() {
		if err := s.open(wi); err != nil {
			startErr = err
			break
		}
	}
	if startErr != nil {
		_ = adminLn.Close()
		s.closeAll()
		return nil, startErr
	}
	admin := &http.Server{Handler: s.adminMux(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute}
	go func() { _ = admin.Serve(adminLn) }()
	loopDone := make(chan struct{})
	loopCtx, stopLoop := context.WithCancel(context.Background())
	go func() {
		defer close(loopDone)
		s.loop(loopCtx)
	}()
	s.mu.Lock()
	s.publishStates()
	s.writeListing()
	l := s.listing()
	s.mu.Unlock()
	if o.Ready != nil {
		o.Ready(l)
	}

	<-ctx.Done()
	// Drain: every worker stops taking requests and finishes its own.
	dctx, cancel := context.WithTimeout(context.Background(), o.DrainTimeout)
	defer cancel()
	_ = admin.Shutdown(dctx)
	s.mu.Lock()
	s.closing = true
	eps := make([]*endpoint, 0, len(s.eps))
	for _, n := range s.order {
		if ep := s.eps[n]; ep != nil {
			eps = append(eps, ep)
		}
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, ep := range eps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = ep.httpSrv.Shutdown(dctx)
		}()
	}
	wg.Wait()
	partial := false
	for {
		s.mu.Lock()
		left := s.admitted - s.ended
		s.mu.Unlock()
		if left == 0 {
			break
		}
		if dctx.Err() != nil {
			partial = true
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	stopLoop()
	<-loopDone
	s.mu.Lock()
	unfinished := int(s.admitted - s.ended)
	residency := map[string][]uint64{}
	for _, wi := range s.f.Workers() {
		if wi.State != fleet.StateGone {
			residency[wi.Name] = s.f.Residency(wi.Name)
		}
	}
	var inflight []*gpu.Job
	if partial {
		inflight = s.f.InFlight()
		s.br.Abort("the drain timed out")
	}
	s.mu.Unlock()
	s.br.Wait()
	s.closeAll()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.f.ResolveColumns(s.jobs)
	pre, dec := s.f.Names()
	res := &Result{Jobs: s.jobs, Prefill: pre, Decode: dec, Links: s.links, End: s.f.Now(), Wall: time.Since(s.start),
		Scale: scale, Partial: partial, Unfinished: unfinished, InFlight: inflight, Residency: residency,
		KVSent: s.kvTotals[0], KVDropped: s.kvTotals[1], KVFailed: s.kvTotals[2], br: s.br}
	s.cmu.Lock()
	res.Clients = s.clients
	s.cmu.Unlock()
	if o.EndpointsFile != "" {
		_ = os.Remove(o.EndpointsFile) // nothing listens any more
	}
	if partial {
		return res, fmt.Errorf("fleet: the drain timed out after %v with %d requests in flight", o.DrainTimeout, unfinished)
	}
	return res, nil
}

func (s *fleetServer) emulated() time.Duration {
	return time.Duration(float64(time.Since(s.start)) * s.scale)
}

// startup is an added worker's start-up delay (docs/MODEL.md §10).
func (s *fleetServer) startup(w topology.Worker) time.Duration {
	d := s.opts.StartupFixed
	if s.opts.WeightsBandwidth > 0 {
		if p, err := cluster.PerfFor(w); err == nil {
			d += time.Duration(p.WeightBytesPerGPU() / s.opts.WeightsBandwidth * float64(time.Second))
		}
	}
	return d
}

func (s *fleetServer) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// dispatch turns the fleet's outputs into stream events, KV batches and
// listing changes (s.mu held).
func (s *fleetServer) dispatch(now time.Duration) {
	outs := s.f.Take()
	batches := map[string]*kvevents.Batch{}
	var order []string
	changed := false
	var gone []*endpoint
	for _, o := range outs {
		switch o.Kind {
		case fleet.OutFirst:
			j := o.Job
			s.br.FirstToken(j.Req.ID, o.Worker, j.Arrival, j.FirstToken, now)
		case fleet.OutDone, fleet.OutFailed:
			j := o.Job
			if tk := s.tickets[j.Req.ID]; tk != nil {
				tk.mu.Lock()
				tk.handoff = o.Handoff
				tk.mu.Unlock()
				delete(s.tickets, j.Req.ID)
			}
			delete(s.reqs, j.Req.ID)
			cached := min(o.CachedBlocks*s.bt, max(j.Req.InputLen-1, 0))
			e := serve.End{ID: j.Req.ID, Worker: o.Worker, Mode: j.Mode.String(), CachedTokens: cached,
				Arrival: j.Arrival, FirstToken: j.FirstToken, Done: j.Done, Failed: j.Failed, Now: now}
			if j.Mode.UsesPrefill() && j.P >= 0 {
				pre, _ := s.f.Names()
				if j.P < len(pre) {
					e.Prefill = pre[j.P]
				}
			}
			s.br.Ended(e)
			s.jobs = append(s.jobs, j)
			s.ended++
		case fleet.OutKV:
			b := batches[o.Worker]
			if b == nil {
				b = &kvevents.Batch{TS: o.At.Seconds()}
				batches[o.Worker] = b
				order = append(order, o.Worker)
			}
			if len(o.Stored) > 0 {
				b.Events = append(b.Events, kvevents.Event{Kind: kvevents.BlockStored, Hashes: o.Stored, Parent: o.Parent,
					HasParent: o.HasParent, BlockSize: s.bt, Medium: kvevents.MediumGPU})
			}
			if len(o.Removed) > 0 {
				b.Events = append(b.Events, kvevents.Event{Kind: kvevents.BlockRemoved, Hashes: o.Removed, Medium: kvevents.MediumGPU})
			}
		case fleet.OutWorker:
			changed = true
			if ep := s.eps[o.Worker]; ep != nil {
				ep.state = o.State
				if o.State == fleet.StateGone {
					gone = append(gone, ep)
				}
			}
		}
	}
	for _, w := range order {
		if ep := s.eps[w]; ep != nil {
			if err := ep.pub.Publish(*batches[w]); err != nil {
				s.log.Warn("kv events", "worker", w, "error", err)
			}
		}
	}
	// Gone: the listing drops it; its server and publisher close once
	// its last events went out (closeEndpoint flushes the publisher).
	for _, ep := range gone {
		go s.closeEndpoint(ep)
	}
	s.publishStates()
	s.sampleLinks(now)
	if changed {
		s.writeListing()
	}
}

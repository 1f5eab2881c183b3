package fleet

import (
	"errors"
	"fmt"
	"time"

	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/policy"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/transfer"
	"github.com/pdemu/pdemu/workload"
)

// Role is what a worker does.
type Role string

// Roles.
const (
	RolePrefill Role = "prefill"
	RoleDecode  Role = "decode"
	RoleFused   Role = "fused" // prefill and decode on one GPU (a plain vLLM pod)
)

// State is a worker's life-cycle state.
type State string

// States. A worker is listed while starting, ready or draining; gone
// workers are only kept for the outputs.
const (
	StateStarting State = "starting" // added; loading weights until ReadyAt
	StateReady    State = "ready"
	StateDraining State = "draining" // no new requests; leaves when idle
	StateGone     State = "gone"
)

// Failure reasons of the hand-off (per_request.csv reason column).
const (
	ReasonUnknownEngine  = "kv-transfer: unknown remote engine"
	ReasonUnknownRequest = "kv-transfer: unknown or already used remote request"
	ReasonExpired        = "kv-transfer: remote KV expired (abort timeout)"
	ReasonMismatch       = "kv-transfer: remote KV is another prompt's"
	ReasonEngineGone     = "kv-transfer: remote engine is gone"
)

// Options configure a Fleet.
type Options struct {
	// HoldTimeout is how long a prefill worker keeps a hand-off's KV for
	// its decode worker to pull (vLLM's VLLM_NIXL_ABORT_REQUEST_TIMEOUT,
	// default 480 s).
	HoldTimeout time.Duration
	// Startup is the start-up delay of a worker added at run time (nil: 0).
	// Workers of the scenario are ready at time 0.
	Startup func(w topology.Worker) time.Duration
}

// Handoff is what a prefill call with RemoteDecode leaves for the decode
// call: the kv_transfer_params a vLLM prefill pod returns (docs/SERVE.md).
type Handoff struct {
	Engine    string   // remote_engine_id: the prefill worker
	RequestID string   // remote_request_id
	BlockIDs  []int    // remote_block_ids: the KV blocks held
	Blocks    []uint64 // the prompt's block hashes (checked on pull)
	InputLen  int
	Expires   time.Duration // emulated time the hold is dropped
}

// Call is one request sent to one worker.
type Call struct {
	Worker string
	Req    *workload.Request // ID unique in the fleet; Arrival is set by Submit
	// RemoteDecode (prefill workers): keep the KV for a decode worker and
	// return a Handoff (kv_transfer_params.do_remote_decode).
	RemoteDecode bool
	// Pull (decode workers): the Handoff of the prefill call whose KV this
	// request pulls (kv_transfer_params.do_remote_prefill); nil: prefill
	// locally.
	Pull *Handoff
}

// OutKind says what an Out reports.
type OutKind uint8

// Out kinds.
const (
	OutFirst  OutKind = iota + 1 // first token (Job.FirstToken)
	OutDone                      // request ended (Job.Done)
	OutFailed                    // request failed (Job.Failed)
	OutKV                        // a worker's KV residency changed
	OutWorker                    // a worker changed state (Worker, State)
)

// Out is one thing that happened.
type Out struct {
	Kind   OutKind
	At     time.Duration
	Worker string
	Job    *gpu.Job // OutFirst, OutDone, OutFailed
	// OutDone of a RemoteDecode prefill call: the hand-off to return.
	Handoff *Handoff
	// CachedBlocks (OutFirst/OutDone/OutFailed): the leading prompt blocks
	// the worker held, by its published KV, when the request arrived, and
	// could reuse (on a decode worker: of the request's own session's
	// residency, since gpu.DecodeWorker keeps KV per session).
	CachedBlocks int
	// OutKV: blocks stored (in chain order; Parent is the block before
	// Stored[0] in the prompt's chain, 0 and HasParent false if none) and
	// removed.
	Stored    []uint64
	Parent    uint64
	HasParent bool
	Removed   []uint64
	// OutWorker
	State State
}

// WorkerInfo describes one worker.
type WorkerInfo struct {
	Name     string
	Role     Role
	State    State
	ReadyAt  time.Duration
	Spec     topology.Worker
	Index    int // by role, stable (outputs' worker columns)
	Running  int
	Waiting  int
	InFlight int // requests submitted and not ended
	KVUsed   int
	KVCap    int
}

// ErrUnknownWorker and the others are Submit's and Drain's errors.
var (
	ErrUnknownWorker = errors.New("no such worker")
	ErrNotReady      = errors.New("the worker is starting (loading weights)")
	ErrDraining      = errors.New("the worker is draining")
	ErrGone          = errors.New("the worker is gone")
)

type nic struct {
	name  string
	nic   *transfer.NIC
	caps  map[string]float64 // decode worker → the link's line rate
	bytes int64              // moved so far
	jobs  map[uint64]*gpu.Job
}

type worker struct {
	name    string
	role    Role
	spec    topology.Worker
	idx     int
	state   State
	readyAt time.Duration
	bytes   int64 // KV bytes per token
	p       *gpu.PrefillWorker
	d       *gpu.DecodeWorker
	fu      *gpu.FusedWorker
	nics    []*nic
	cap     int
	// inflight: submitted and not ended, by request ID.
	inflight map[int64]*gpu.Job
	// blocks: the published KV index, block → holders (prefill: 1;
	// decode: resident sessions whose prompt has it).
	blocks map[uint64]int
	// sess (decode): each resident session's published blocks.
	sess map[int32][]uint64
}

// Fleet is the pure core; see the package doc.
type Fleet struct {
	opts    Options
	spec    *topology.Spec
	workers []*worker // every worker ever, in creation order
	byName  map[string]*worker
	nPre    int
	nDec    int
	nFused  int
	holds   map[string]*Handoff
	now     time.Duration
	out     []Out
	ended   []*gpu.Job
	hints   map[*gpu.Job]hint
	purgeAt int // purge expired holds when there are this many
}

// DefaultHoldTimeout is vLLM's VLLM_NIXL_ABORT_REQUEST_TIMEOUT default.
const DefaultHoldTimeout = 480 * time.Second

// New builds the fleet of spec's prefill, decode and fused workers (the
// routers, P/D or bucketed, are not used).
func New(spec *topology.Spec, o Options) (*Fleet, error) {
	if len(spec.Decode) == 0 && len(spec.Fused) == 0 {
		return nil, fmt.Errorf("fleet: %s has no decode or fused worker", spec.Source)
	}
	if o.HoldTimeout <= 0 {
		o.HoldTimeout = DefaultHoldTimeout
	}
	f := &Fleet{opts: o, spec: spec, byName: map[string]*worker{}, holds: map[string]*Handoff{}, hints: map[*gpu.Job]hint{}, purgeAt: 1024}
	nics, err := spec.NICs()
	if err != nil {
		return nil, err
	}
	cfgs, err := cluster.NICConfigs(spec)
	if err != nil {
		return nil, err
	}
	for _, w := range spec.Prefill {
		var mine []*nic
		for i, n := range nics {
			if n.Prefill != w.Name {
				continue
			}
			tn, err := transfer.NewNIC(cfgs[i])
			if err != nil {
				return nil, fmt.Errorf("fleet: links over %s: %w", cfgs[i].Name, err)
			}
			nn := &nic{name: cfgs[i].Name, nic: tn, caps: map[string]float64{}, jobs: map[uint64]*gpu.Job{}}
			for _, li := range n.Links {
				nn.caps[spec.Links[li].To] = spec.Links[li].Bandwidth
			}
			mine = append(mine, nn)
		}
		if err := f.add(0, w, RolePrefill, mine, 0); err != nil {
			return nil, err
		}
	}
	for _, w := range spec.Fused {
		if err := f.add(0, w, RoleFused, nil, 0); err != nil {
			return nil, err
		}
	}
	for _, w := range spec.Decode {
		if err := f.add(0, w, RoleDecode, nil, 0); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (f *Fleet) add(now time.Duration, w topology.Worker, role Role, nics []*nic, delay time.Duration) error {
	if w.Name == "" {
		return errors.New("fleet: a worker needs a name")
	}
	if _, dup := f.byName[w.Name]; dup {
		return fmt.Errorf("fleet: worker %q exists already (names are never reused)", w.Name)
	}
	p, err := cluster.PerfFor(w)
	if err != nil {
		return err
	}
	budget := w.KVBudgetTokens
	if budget <= 0 {
		frac := w.MemFractionStatic
		if frac == 0 {
			frac = 0.88
		}
		if budget = p.PoolTokens(frac); budget <= 0 {
			return fmt.Errorf("worker %s: model %s does not fit on %s x%d (no KV pool left)", w.Name, w.Model, w.GPU, max(w.TP, 1))
		}
	}
	wk := &worker{name: w.Name, role: role, spec: w, state: StateReady, readyAt: now + delay, bytes: p.KVBytesPerToken(),
		nics: nics, inflight: map[int64]*gpu.Job{}, blocks: map[uint64]int{}}
	if delay > 0 {
		wk.state = StateStarting
	}
	r := f.spec.Router
	switch role {
	case RoleDecode:
		cfg := gpu.DecodeConfig{Name: w.Name, Budget: budget, Rho: r.Rho, TauAppend: r.TauAppend,
			ReserveOutput: r.ReserveOutput, NetCapacity: r.NetCapacity, MaxRunning: w.MaxRunning, ChunkTokens: w.MaxBatchTokens,
			ResidentAppend: r.ResidentAppend}
		if cfg.Rho <= 0 {
			cfg.Rho = 1
		}
		d, err := gpu.NewDecodeWorker(cfg, p)
		if err != nil {
			return err
		}
		wk.d, wk.idx, wk.cap, wk.sess = d, f.nDec, d.Cap(), map[int32][]uint64{}
		f.nDec++
	case RolePrefill:
		pw, err := gpu.NewPrefillWorker(gpu.PrefillConfig{Name: w.Name, CacheTokens: budget, MaxBatchTokens: w.MaxBatchTokens, TrackCache: true}, p)
		if err != nil {
			return err
		}
		wk.p, wk.idx, wk.cap = pw, f.nPre, budget
		f.nPre++
	case RoleFused:
		dram := w.DRAMBandwidth
		if dram == 0 {
			dram = topology.DefaultDRAMBandwidth
		}
		rho := r.Rho
		if rho <= 0 {
			rho = 1
		}
		fw, err := gpu.NewFusedWorker(gpu.FusedConfig{Name: w.Name, Budget: budget, Rho: rho, MaxRunning: w.MaxRunning,
			ChunkTokens: w.MaxBatchTokens, DRAMTokens: w.DRAMCacheTokens, DRAMBandwidth: dram,
			KVBytesPerToken: p.KVBytesPerToken(), TrackCache: true}, p)
		if err != nil {
			return err
		}
		// Fused workers share the decode columns of the outputs, after the
		// decode workers (Names).
		wk.fu, wk.idx, wk.cap = fw, f.nFused, fw.Cap()
		f.nFused++
	default:
		return fmt.Errorf("fleet: unknown role %q (prefill or decode)", role)
	}
	f.workers = append(f.workers, wk)
	f.byName[w.Name] = wk
	if now > 0 || delay > 0 {
		f.out = append(f.out, Out{Kind: OutWorker, At: now, Worker: w.Name, State: wk.state})
	}
	return nil
}

// Submit starts c at now. An error means the request was not started (no
// Out will come for it).
func (f *Fleet) Submit(now time.Duration, c Call) error {
	f.Advance(now)
	w := f.byName[c.Worker]
	if w == nil {
		return fmt.Errorf("fleet: %w: %q", ErrUnknownWorker, c.Worker)
	}
	switch w.state {
	case StateStarting:
		return fmt.Errorf("fleet: %s: %w until %v", c.Worker, ErrNotReady, w.readyAt)
	case StateDraining:
		return fmt.Errorf("fleet: %s: %w", c.Worker, ErrDraining)
	case StateGone:
		return fmt.Errorf("fleet: %s: %w", c.Worker, ErrGone)
	}
	r := c.Req
	if _, dup := w.inflight[r.ID]; dup {
		return fmt.Errorf("fleet: request %d is in flight on %s already", r.ID, c.Worker)
	}
	j := &gpu.Job{Req: r, P: -1, D: -1, Arrival: now}
	hit := f.prefixHit(w, r.Blocks)
	if w.role == RoleDecode {
		// A decode worker's KV is per session (gpu.DecodeWorker): only the
		// session's own resident prefix is reused, whatever other sessions'
		// blocks the worker holds.
		own, _ := w.d.ResidentBlocks(r.Session)
		k := 0
		for k < len(own) && k < len(r.Blocks) && own[k] == r.Blocks[k] {
			k++
		}
		hit = min(hit, k)
	}
	w.inflight[r.ID] = j
	switch w.role {
	case RolePrefill:
		j.Mode, j.P = policy.ModeVanilla, w.idx
		f.hints[j] = hint{worker: w, remote: c.RemoteDecode, hit: hit}
		w.p.Submit(now, j)
		f.stepPrefill(now, w)
	case RoleFused:
		if c.Pull != nil || c.RemoteDecode {
			delete(w.inflight, r.ID)
			return fmt.Errorf("fleet: %s is a fused worker: it serves requests whole (no kv_transfer_params hand-off)", c.Worker)
		}
		j.D = f.fusedCol(w)
		f.hints[j] = hint{worker: w, hit: hit}
		w.fu.Submit(now, j)
		f.stepFused(now, w)
	case RoleDecode:
		j.D = w.idx
		f.hints[j] = hint{worker: w, hit: hit}
		if c.Pull == nil {
			w.d.Run(now, j)
			f.stepDecode(now, w)
			return nil
		}
		f.pull(now, w, j, c.Pull, hit)
	}
	return nil
}

// Advance runs every worker and NIC to now, in emulated-time order.
func (f *Fleet) Advance(now time.Duration) {
	if now < f.now {
		now = f.now // times never go back (a late caller sees the present)
	}
	for {
		t, ok := f.NextEvent()
		if !ok || t > now {
			break
		}
		f.stepAll(t)
	}
	f.stepAll(now)
	f.now = now
}

// stepAll advances everything to t: prefill workers, then NICs (whose
// transfers feed decode workers), then decode workers, each in creation
// order; workers whose start-up ended become ready.
func (f *Fleet) stepAll(t time.Duration) {
	for _, w := range f.workers {
		if w.state == StateStarting && w.readyAt <= t {
			w.state = StateReady
			f.emit(Out{Kind: OutWorker, At: w.readyAt, Worker: w.name, State: StateReady})
		}
	}
	for _, w := range f.workers {
		if w.role == RolePrefill && w.state != StateGone {
			f.stepPrefill(t, w)
		}
	}
	for _, w := range f.workers {
		for _, n := range w.nics {
			if len(n.jobs) > 0 {
				f.stepNIC(t, w, n)
			}
		}
	}
	for _, w := range f.workers {
		if w.state == StateGone {
			continue
		}
		switch w.role {
		case RoleDecode:
			f.stepDecode(t, w)
		case RoleFused:
			f.stepFused(t, w)
		}
	}
}

// NextEvent is when Advance has something to do next.
func (f *Fleet) NextEvent() (time.Duration, bool) {
	var at time.Duration
	ok := false
	take := func(t time.Duration, has bool) {
		if has && (!ok || t < at) {
			at, ok = t, true
		}
	}
	for _, w := range f.workers {
		switch {
		case w.state == StateStarting:
			take(w.readyAt, true)
		case w.state == StateGone:
		case w.role == RolePrefill:
			take(w.p.NextEvent())
		case w.role == RoleFused:
			take(w.fu.NextEvent())
		default:
			take(w.d.NextEvent())
		}
		for _, n := range w.nics {
			if len(n.jobs) > 0 {
				take(n.nic.NextEvent())
			}
		}
	}
	if ok && at < f.now {
		at = f.now
	}
	return at, ok
}

package fleet

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
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

// Add starts worker w with role at now, cloned from the links of worker
// like (a worker of the same role; "" = the first one): a new decode
// worker is reachable over every NIC that reaches like, at the same line
// rate; a new prefill worker gets copies of like's NICs. It is ready after
// Options.Startup(w).
func (f *Fleet) Add(now time.Duration, w topology.Worker, role Role, like string) error {
	f.Advance(now)
	var tmpl *worker
	for _, o := range f.workers {
		if o.role == role && (like == "" || o.name == like) {
			tmpl = o
			break
		}
	}
	if tmpl == nil {
		if like != "" {
			return fmt.Errorf("fleet: %w: %q (to clone the links of a new %s worker)", ErrUnknownWorker, like, role)
		}
		return fmt.Errorf("fleet: no %s worker to clone the links of", role)
	}
	if w.GPU == "" {
		w.GPU = tmpl.spec.GPU
	}
	if w.Model == "" {
		w.Model = tmpl.spec.Model
	}
	if w.TP == 0 {
		w.TP = tmpl.spec.TP
	}
	if w.KVBudgetTokens == 0 && w.MemFractionStatic == 0 {
		w.KVBudgetTokens, w.MemFractionStatic = tmpl.spec.KVBudgetTokens, tmpl.spec.MemFractionStatic
	}
	if w.MaxBatchTokens == 0 {
		w.MaxBatchTokens = tmpl.spec.MaxBatchTokens
	}
	if w.MaxRunning == 0 {
		w.MaxRunning = tmpl.spec.MaxRunning
	}
	if w.DRAMCacheTokens == 0 && w.DRAMBandwidth == 0 {
		w.DRAMCacheTokens, w.DRAMBandwidth = tmpl.spec.DRAMCacheTokens, tmpl.spec.DRAMBandwidth
	}
	if w.Perf == (topology.PerfOverrides{}) {
		w.Perf = tmpl.spec.Perf
	}
	w.Kind = tmpl.spec.Kind
	var delay time.Duration
	if f.opts.Startup != nil {
		delay = f.opts.Startup(w)
	}
	var nics []*nic
	switch role {
	case RoleDecode:
		for _, o := range f.workers {
			for _, n := range o.nics {
				if c, ok := n.caps[tmpl.name]; ok {
					n.caps[w.Name] = c
				}
			}
		}
	case RolePrefill:
		for _, n := range tmpl.nics {
			cfg := n.nic.Config()
			cfg.Name = w.Name + cfg.Name[len(tmpl.name):]
			tn, err := transfer.NewNIC(cfg)
			if err != nil {
				return err
			}
			nn := &nic{name: cfg.Name, nic: tn, caps: map[string]float64{}, jobs: map[uint64]*gpu.Job{}}
			for k, v := range n.caps {
				nn.caps[k] = v
			}
			nics = append(nics, nn)
		}
	}
	return f.add(now, w, role, nics, delay)
}

// Drain stops sending new requests to worker name; it leaves (StateGone)
// once nothing is in flight on it or on its NICs.
func (f *Fleet) Drain(now time.Duration, name string) error {
	f.Advance(now)
	w := f.byName[name]
	if w == nil {
		return fmt.Errorf("fleet: %w: %q", ErrUnknownWorker, name)
	}
	switch w.state {
	case StateGone:
		return fmt.Errorf("fleet: %q: %w", name, ErrGone)
	case StateDraining:
		return nil
	}
	w.state = StateDraining
	f.out = append(f.out, Out{Kind: OutWorker, At: now, Worker: name, State: StateDraining})
	f.leaveIfIdle(now, w)
	return nil
}

func (f *Fleet) leaveIfIdle(now time.Duration, w *worker) {
	if w.state != StateDraining || len(w.inflight) > 0 {
		return
	}
	for _, n := range w.nics {
		if len(n.jobs) > 0 {
			return
		}
	}
	w.state = StateGone
	f.out = append(f.out, Out{Kind: OutWorker, At: now, Worker: w.name, State: StateGone})
	// Its KV is gone with it: a subscriber that still listens hears
	// every block removed.
	if len(w.blocks) > 0 {
		f.out = append(f.out, Out{Kind: OutKV, At: now, Worker: w.name, Removed: sortedKeys(w.blocks)})
		clear(w.blocks)
	}
	for id, h := range f.holds {
		if h.Engine == w.name {
			delete(f.holds, id)
		}
	}
}

func sortedKeys(m map[uint64]int) []uint64 {
	out := make([]uint64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
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

// hint is what the fleet remembers of a job beyond gpu.Job.
type hint struct {
	worker *worker
	remote bool
	hit    int
}

// prefixHit is how many leading blocks w holds by its published index.
func (f *Fleet) prefixHit(w *worker, blocks []uint64) int {
	n := 0
	for n < len(blocks) && w.blocks[blocks[n]] > 0 {
		n++
	}
	return n
}

// pull starts the KV transfer of decode job j from h's prefill worker.
func (f *Fleet) pull(now time.Duration, d *worker, j *gpu.Job, h *Handoff, hit int) {
	r := j.Req
	j.Mode, j.Unadmitted = policy.ModeSeed, true
	fail := func(reason string) {
		j.Failed, j.Done = reason, now
		f.end(now, d, j, OutFailed)
		f.leaveIfIdle(now, d)
	}
	p := f.byName[h.Engine]
	if p == nil || p.role != RolePrefill {
		fail(ReasonUnknownEngine)
		return
	}
	j.P = p.idx
	if p.state == StateGone {
		fail(ReasonEngineGone)
		return
	}
	held := f.holds[h.RequestID]
	if h.RequestID == "" {
		// Older proxies send no remote_request_id: the hold of this engine
		// for this very prompt, the oldest first.
		held = f.holdFor(h.Engine, r)
		if held != nil {
			h.RequestID = held.RequestID
		}
	}
	switch {
	case held == nil || held.Engine != h.Engine:
		fail(ReasonUnknownRequest)
		return
	case now > held.Expires:
		delete(f.holds, h.RequestID)
		fail(ReasonExpired)
		return
	case held.InputLen != r.InputLen || !slices.Equal(held.Blocks, r.Blocks) || (h.BlockIDs != nil && !slices.Equal(held.BlockIDs, h.BlockIDs)):
		fail(ReasonMismatch)
		return
	}
	delete(f.holds, h.RequestID) // read once: vLLM frees P's blocks after the read
	// The decode worker computes nothing: what it holds already is not
	// pulled (vLLM's local prefix hit), the rest comes over the link.
	local := min(hit*r.BlockTokens, r.InputLen)
	j.CachedTokens, j.PrefillTokens = local, 0
	j.TransferBytes = int64(r.InputLen-local) * p.bytes
	var n *nic
	for _, c := range p.nics {
		if _, ok := c.caps[d.name]; ok {
			n = c
			break
		}
	}
	if n == nil && len(p.nics) > 0 {
		n = p.nics[0]
	}
	j.TransferStart = now
	if n == nil {
		// No link modelled: the KV arrives at once.
		j.TransferEnd = now
		d.d.Arrive(now, j)
		f.stepDecode(now, d)
		return
	}
	n.jobs[uint64(r.ID)] = j
	n.bytes += j.TransferBytes
	n.nic.Start(now, uint64(r.ID), j.TransferBytes, n.caps[d.name])
	f.stepNIC(now, p, n)
}

// stepPrefill collects what prefill worker w finished by now.
func (f *Fleet) stepPrefill(now time.Duration, w *worker) {
	w.p.Advance(now)
	rd := w.p.Ready()
	for _, ch := range w.p.TakeCacheChanges() {
		f.prefillKV(w, ch)
	}
	for _, j := range rd.Out {
		j.FirstToken, j.Done = j.PrefillEnd, j.PrefillEnd
		h := f.hints[j]
		f.emit(Out{Kind: OutFirst, At: j.PrefillEnd, Worker: w.name, Job: j, CachedBlocks: h.hit})
		var ho *Handoff
		if h.remote {
			ho = &Handoff{Engine: w.name, RequestID: fmt.Sprintf("pdemu-%s-%d", w.name, j.Req.ID),
				Blocks: j.Req.Blocks, InputLen: j.Req.InputLen, Expires: j.PrefillEnd + f.opts.HoldTimeout}
			ho.BlockIDs = make([]int, (j.Req.InputLen+j.Req.BlockTokens-1)/max(j.Req.BlockTokens, 1))
			for i := range ho.BlockIDs {
				ho.BlockIDs[i] = i
			}
			f.holds[ho.RequestID] = ho
			if len(f.holds) >= f.purgeAt {
				f.purge(j.PrefillEnd)
			}
		}
		f.endWith(j.PrefillEnd, w, j, OutDone, ho)
	}
	f.leaveIfIdle(now, w)
}

// stepFused collects what fused worker w did by now.
func (f *Fleet) stepFused(now time.Duration, w *worker) {
	w.fu.Advance(now)
	rd := w.fu.Ready()
	for _, ch := range w.fu.TakeCacheChanges() {
		f.prefillKV(w, ch)
	}
	for _, ev := range rd.Out {
		switch ev.Kind {
		case gpu.EvFirstToken:
			f.emit(Out{Kind: OutFirst, At: ev.At, Worker: w.name, Job: ev.Job, CachedBlocks: f.hints[ev.Job].hit})
		case gpu.EvDone, gpu.EvFailed:
			kind := OutDone
			if ev.Kind == gpu.EvFailed {
				kind = OutFailed
			}
			if ev.Job.FirstToken == 0 && kind == OutDone {
				ev.Job.FirstToken = ev.Job.Done
			}
			f.end(ev.At, w, ev.Job, kind)
		}
	}
	f.leaveIfIdle(now, w)
}

// fusedCol is fused worker w's index in the outputs' decode column (after
// every decode worker ever created: Names).
func (f *Fleet) fusedCol(w *worker) int { return -1 - w.idx }

// prefillKV publishes one change of a prefill worker's prefix cache.
func (f *Fleet) prefillKV(w *worker, ch gpu.CacheChange) {
	// Stored: the blocks of the chain not published yet, as runs of the
	// chain (each with its parent).
	start := -1
	flush := func(end int) {
		if start < 0 {
			return
		}
		o := Out{Kind: OutKV, At: ch.At, Worker: w.name, Stored: append([]uint64(nil), ch.Stored[start:end]...)}
		if start > 0 {
			o.Parent, o.HasParent = ch.Stored[start-1], true
		}
		f.emit(o)
		start = -1
	}
	for i, b := range ch.Stored {
		if w.blocks[b] > 0 {
			flush(i)
			continue
		}
		w.blocks[b] = 1
		if start < 0 {
			start = i
		}
	}
	flush(len(ch.Stored))
	var rm []uint64
	for _, b := range ch.Removed {
		if w.blocks[b] > 0 {
			delete(w.blocks, b)
			rm = append(rm, b)
		}
	}
	if len(rm) > 0 {
		f.emit(Out{Kind: OutKV, At: ch.At, Worker: w.name, Removed: rm})
	}
}

// stepNIC delivers the transfers of NIC n (of prefill worker p) that
// ended by now.
func (f *Fleet) stepNIC(now time.Duration, p *worker, n *nic) {
	n.nic.Advance(now)
	rd := n.nic.Ready()
	for _, c := range rd.Out {
		j := n.jobs[c.ID]
		delete(n.jobs, c.ID)
		if j == nil {
			continue
		}
		j.TransferEnd = c.At
		if c.Err != nil {
			j.Failed = "link: " + c.Err.Error()
		}
		d := f.hints[j].worker
		d.d.Arrive(c.At, j)
		f.stepDecode(c.At, d)
	}
	f.leaveIfIdle(now, p)
}

// stepDecode collects what decode worker w did by now and publishes the
// residency changes of the sessions concerned.
func (f *Fleet) stepDecode(now time.Duration, w *worker) {
	w.d.Advance(now)
	rd := w.d.Ready()
	touched := map[int32]bool{}
	for _, j := range w.inflight {
		touched[j.Req.Session] = true
	}
	var ends []gpu.Event
	for _, ev := range rd.Out {
		switch ev.Kind {
		case gpu.EvFirstToken:
			h := f.hints[ev.Job]
			f.emit(Out{Kind: OutFirst, At: ev.At, Worker: w.name, Job: ev.Job, CachedBlocks: h.hit})
		case gpu.EvDone, gpu.EvFailed:
			touched[ev.Job.Req.Session] = true
			ends = append(ends, ev)
		case gpu.EvEvicted:
			touched[ev.Session] = true
		}
	}
	f.decodeKV(now, w, touched)
	for _, ev := range ends {
		kind := OutDone
		if ev.Kind == gpu.EvFailed {
			kind = OutFailed
		}
		if ev.Job.FirstToken == 0 && kind == OutDone {
			ev.Job.FirstToken = ev.Job.Done
		}
		f.end(ev.At, w, ev.Job, kind)
	}
	f.leaveIfIdle(now, w)
}

// decodeKV compares the published blocks of the touched sessions of w
// with their residency and publishes the difference.
func (f *Fleet) decodeKV(now time.Duration, w *worker, touched map[int32]bool) {
	ss := make([]int32, 0, len(touched))
	for s := range touched {
		ss = append(ss, s)
	}
	slices.Sort(ss)
	var stored []Out
	var removed []uint64
	for _, s := range ss {
		cur, _ := w.d.ResidentBlocks(s)
		old := w.sess[s]
		if slices.Equal(cur, old) {
			continue
		}
		for _, b := range old {
			if w.blocks[b]--; w.blocks[b] <= 0 {
				delete(w.blocks, b)
				removed = append(removed, b)
			}
		}
		if cur == nil {
			delete(w.sess, s)
		} else {
			w.sess[s] = cur
		}
		start := -1
		for i, b := range cur {
			w.blocks[b]++
			if w.blocks[b] == 1 && !slices.Contains(removed, b) {
				if start < 0 {
					start = i
				}
				continue
			}
			if w.blocks[b] == 1 {
				// Removed above by this session's old prompt and back now:
				// not a change.
				removed = slices.DeleteFunc(removed, func(x uint64) bool { return x == b })
			}
			if start >= 0 {
				stored = append(stored, storedRun(now, w.name, cur, start, i))
				start = -1
			}
		}
		if start >= 0 {
			stored = append(stored, storedRun(now, w.name, cur, start, len(cur)))
		}
	}
	for _, o := range stored {
		f.emit(o)
	}
	if len(removed) > 0 {
		f.emit(Out{Kind: OutKV, At: now, Worker: w.name, Removed: removed})
	}
}

func storedRun(at time.Duration, name string, chain []uint64, start, end int) Out {
	o := Out{Kind: OutKV, At: at, Worker: name, Stored: append([]uint64(nil), chain[start:end]...)}
	if start > 0 {
		o.Parent, o.HasParent = chain[start-1], true
	}
	return o
}

func (f *Fleet) emit(o Out) { f.out = append(f.out, o) }

func (f *Fleet) end(at time.Duration, w *worker, j *gpu.Job, kind OutKind) {
	f.endWith(at, w, j, kind, nil)
}

func (f *Fleet) endWith(at time.Duration, w *worker, j *gpu.Job, kind OutKind, h *Handoff) {
	delete(w.inflight, j.Req.ID)
	hit := f.hints[j].hit
	delete(f.hints, j)
	if j.Done < j.Arrival {
		j.Done = at
	}
	f.ended = append(f.ended, j)
	f.emit(Out{Kind: kind, At: at, Worker: w.name, Job: j, Handoff: h, CachedBlocks: hit})
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

// Take returns and clears what happened since the last call, in order.
func (f *Fleet) Take() []Out {
	out := f.out
	f.out = nil
	return out
}

// Ended returns and clears the jobs that ended since the last call, in
// end order (for the outputs).
func (f *Fleet) Ended() []*gpu.Job {
	out := f.ended
	f.ended = nil
	return out
}

// Workers lists every worker ever created, in creation order (gone ones
// too: filter on State).
func (f *Fleet) Workers() []WorkerInfo {
	out := make([]WorkerInfo, 0, len(f.workers))
	for _, w := range f.workers {
		wi := WorkerInfo{Name: w.name, Role: w.role, State: w.state, ReadyAt: w.readyAt, Spec: w.spec, Index: w.idx,
			InFlight: len(w.inflight), KVCap: w.cap}
		switch w.role {
		case RolePrefill:
			wi.Running, wi.Waiting, wi.KVUsed = w.p.Running(), w.p.Queued(), w.p.CacheUsed()
		case RoleFused:
			wi.Running, wi.Waiting, wi.KVUsed = w.fu.Running(), w.fu.Queued(), w.fu.Used()
		default:
			wi.Running, wi.Waiting, wi.KVUsed = w.d.Running(), w.d.Queued(), w.d.Used()
		}
		out = append(out, wi)
	}
	return out
}

// Worker is one worker's info.
func (f *Fleet) Worker(name string) (WorkerInfo, bool) {
	for _, wi := range f.Workers() {
		if wi.Name == name {
			return wi, true
		}
	}
	return WorkerInfo{}, false
}

// Names returns the prefill and decode worker names by role index (the
// outputs' worker columns); fused workers follow the decode workers.
func (f *Fleet) Names() (prefill, decode []string) {
	var fused []string
	for _, w := range f.workers {
		switch w.role {
		case RolePrefill:
			prefill = append(prefill, w.name)
		case RoleFused:
			fused = append(fused, w.name)
		default:
			decode = append(decode, w.name)
		}
	}
	return prefill, append(decode, fused...)
}

// ResolveColumns rewrites the ended jobs' fused-worker columns (negative
// D, see fusedCol) to their index in Names' decode list; call it on the
// jobs of Ended once no more workers will be added.
func (f *Fleet) ResolveColumns(jobs []*gpu.Job) {
	_, dec := f.Names()
	nd := len(dec) - f.nFused
	for _, j := range jobs {
		if j.D < 0 && j.Mode == policy.ModeFused {
			j.D = nd + (-1 - j.D)
		}
	}
}

// LinkState is one NIC's traffic so far and its load now.
type LinkState struct {
	Name     string
	Worker   string // the prefill worker it belongs to
	Bytes    int64  // KV bytes started on it so far
	Active   int    // transfers in flight
	InFlight int64  // bytes still to move
	Rate     float64
	LineRate float64 // bytes/s
}

// Links lists every NIC, in creation order.
func (f *Fleet) Links() []LinkState {
	var out []LinkState
	for _, w := range f.workers {
		for _, n := range w.nics {
			b, r := n.nic.Load(f.now)
			out = append(out, LinkState{Name: n.name, Worker: w.name, Bytes: n.bytes, Active: n.nic.Active(), InFlight: b, Rate: r, LineRate: n.nic.Bandwidth()})
		}
	}
	return out
}

// Residency is the set of block hashes worker name holds now, by its own
// state (the prefill worker's prefix cache; the decode worker's resident
// sessions' prompt blocks), sorted: what the published KV events must add
// up to.
func (f *Fleet) Residency(name string) []uint64 {
	w := f.byName[name]
	if w == nil || w.state == StateGone {
		return nil
	}
	set := map[uint64]int{}
	switch w.role {
	case RolePrefill:
		for _, b := range w.p.CacheKeys() {
			set[b] = 1
		}
	case RoleFused:
		for _, b := range w.fu.CacheKeys() {
			set[b] = 1
		}
	default:
		w.d.ResidentSessions(func(_ int32, blocks []uint64) {
			for _, b := range blocks {
				set[b] = 1
			}
		})
	}
	return sortedKeys(set)
}

// purge drops the holds expired at now (nobody pulled them: vLLM frees
// their blocks after the abort timeout), so the map stays bounded by the
// holds of the last HoldTimeout.
func (f *Fleet) purge(now time.Duration) {
	for id, h := range f.holds {
		if now > h.Expires {
			delete(f.holds, id)
		}
	}
	f.purgeAt = max(1024, 2*len(f.holds))
}

// holdFor is engine's oldest hold of r's prompt (nil if none).
func (f *Fleet) holdFor(engine string, r *workload.Request) *Handoff {
	var best *Handoff
	for _, h := range f.holds {
		if h.Engine != engine || h.InputLen != r.InputLen || !slices.Equal(h.Blocks, r.Blocks) {
			continue
		}
		if best == nil || h.Expires < best.Expires || (h.Expires == best.Expires && h.RequestID < best.RequestID) {
			best = h
		}
	}
	return best
}

// InFlight is every job submitted and not ended, by request ID (for a
// run cut short: per_request.csv's unfinished rows).
func (f *Fleet) InFlight() []*gpu.Job {
	var out []*gpu.Job
	for _, w := range f.workers {
		for _, j := range w.inflight {
			out = append(out, j)
		}
	}
	slices.SortFunc(out, func(a, b *gpu.Job) int { return cmp.Compare(a.Req.ID, b.Req.ID) })
	return out
}

// Holds is the number of hand-offs waiting to be pulled.
func (f *Fleet) Holds() int { return len(f.holds) }

// Now is the fleet's emulated time (the last Advance).
func (f *Fleet) Now() time.Duration { return f.now }

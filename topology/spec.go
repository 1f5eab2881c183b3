// Package topology turns an HCL scenario file into an immutable, validated
// Spec. The Spec is plain Go: no hcl or cty type leaks out of this package,
// so every other package (and every test) can build a Spec by hand.
//
// Contract: Parse either returns a Spec in which every invariant below holds
// (names unique, every link endpoint exists, every budget positive, every
// default filled in) or hcl.Diagnostics that point at the offending file,
// line and column. It never panics on any input.
//
// Beyond plain HCL, a scenario may extend another (extends = "FILE",
// Terraform-style override rules: see compose.go), generate blocks with
// `dynamic` blocks (hcl/v2 ext/dynblock) and use the functions min, max,
// floor, ceil, range, setproduct and format. Options.Set and Options.Router
// (the CLI's --set and --router) override attributes and the routing policy
// with the same diagnostics as the file (set.go). Input bounds (file size,
// nesting, plausible values) are in limits.go and docs/MODEL.md §6.
package topology

import "time"

// Kind says what a worker does.
type Kind string

// Worker kinds; each has its own HCL block type (prefill, decode, fused).
const (
	KindPrefill Kind = "prefill"
	KindDecode  Kind = "decode"
	KindFused   Kind = "fused" // prefill+decode on one GPU (data-parallel baselines)
)

// Spec is a validated scenario. Treat it as read-only.
type Spec struct {
	// Source is the file the spec was read from ("<embedded>/name.hcl" for
	// embedded scenarios). Relative paths inside Workload are already
	// resolved against its directory.
	Source string
	// Name is the optional scenario name (top-level `name = "..."`).
	Name string
	// Digest is "sha256:" and the hex SHA-256 over every HCL file the
	// scenario was composed from (its extends chain, base first), each as
	// its length and its bytes: two runs with the same Digest, Vars and Set
	// read the same scenario, wherever the files were.
	Digest string
	// Vars and Set are the -var values and --set overrides it was parsed
	// with (recorded in summary.json).
	Vars map[string]string
	Set  []string
	// SLO is the run's service-level objective (slo block, or the
	// defaults).
	SLO SLO
	// RouterSwap is what Options.Router (--router) did; nil without it.
	RouterSwap *RouterSwap

	Prefill  []Worker // in file order
	Decode   []Worker // in file order
	Fused    []Worker // in file order
	Links    []Link   // in file order; every From is a prefill worker, every To a decode worker
	Router   Router
	Workload Workload

	// Bucket routing (two-level: a global router picks an input-length
	// bucket, the bucket's local router an instance). Buckets is empty
	// unless routing is bucketed, which happens in two forms:
	//   - bucket form: bucket, global_router and local_router blocks over
	//     fused workers; Router.Policy is PolicyBuckets;
	//   - single pool: a router block whose label is a local policy (e.g.
	//     router "cache_affinity" {}) over fused workers; Router.Policy is
	//     that label, Buckets holds one implicit bucket ImplicitBucket
	//     covering [0, math.MaxInt] with every fused worker, and
	//     GlobalRouter is strict_input_length.
	// So len(Buckets) > 0 is the one test for the bucket runtime. Then
	// every fused worker is in exactly one bucket, there are no prefill or
	// decode workers, and the ranges tile [min of all, max of all] without
	// gaps or overlaps (lengths outside it are a run-time matter).
	Buckets      []Bucket // in file order; a bucket's id is its index
	GlobalRouter GlobalRouter
	LocalRouter  LocalRouter

	// Recovery is how the routers notice faults and retry the requests
	// they hit (the recovery block, defaults filled in); Chaos is the
	// chaos block (nil = none), whose drawn faults are already in the
	// workers' and links' fault lists.
	Recovery Recovery
	Chaos    *Chaos
}

// Bucket is an input-length bucket: the input lengths it serves (inclusive)
// and its instances, fused workers that belong to no other bucket.
type Bucket struct {
	Name      string
	Min, Max  int      // input tokens, 0 <= Min <= Max
	Instances []string // fused worker names, in the order written
	// RemoteFetchBandwidth (bytes/s) is the RDMA fabric between the
	// bucket's instances: an instance that lacks a prefix another instance
	// of the same bucket holds fetches it instead of recomputing it
	// (0 = no remote fetch). Never across buckets.
	RemoteFetchBandwidth float64
	// Faults are the bucket's crashes (Kind FaultCrash only), in time
	// order: every instance and the meta-store lose their state.
	Faults []NodeFault
}

// GlobalRouter is the bucket-choosing router and its parameters, with
// defaults filled in (see policy/bucket for the formulas).
type GlobalRouter struct {
	Policy string // "strict_input_length" | "bucket_score"
	// bucket_score weights (>= 0; default 1 each): score =
	// LengthPenaltyWeight·length_penalty + LoadWeight·load + CacheWeight·miss.
	LengthPenaltyWeight, LoadWeight, CacheWeight float64
}

// LocalRouter is the instance-choosing router shared by every bucket, and
// its parameters with defaults filled in. Every local policy takes every
// parameter (as in the source design, one router configuration for all
// buckets; a policy ignores those it does not use), so switching the
// policy label needs no other edit.
type LocalRouter struct {
	Policy       string        // a policy/bucket local policy name
	MetaStoreTTL time.Duration // meta-store entry lifetime after its last record; 0 = forever (1000s)
	ProbeLatency time.Duration // precise: cost of one probe of an instance's cache (10µs)
	ProbeTopK    int           // precise: instances probed; 0 = all (4)
	LoadAlpha    float64       // cache_load: weight of the load (0.1)
	ScoreAlpha   float64       // cache_score: weight of the predicted prefix (1)
	ScoreBeta    float64       // cache_score: weight of the load (0.1)
	PrefixK      int           // prefix_affinity, cache_affinity: blocks hashed for the home instance (8)
	FanOut       int           // prefix_affinity, cache_affinity: spread over the top FanOut by load; 0 or 1 = home only (0)
	Alpha        float64       // kvc: sticky bonus α (1)
	// OverloadFactor (cache_affinity): an instance is overloaded above
	// OverloadFactor × max(mean load, 1) (2).
	OverloadFactor float64
	// cache_aware_dp: follow the cache when the matched prompt fraction
	// is above CacheThreshold (0.3; at or above with InclusiveMatch),
	// unless max−min load > BalanceAbs (64) and max > BalanceRel·min load
	// (1.5); otherwise MissRule ("smallest_tree" | "least_loaded").
	CacheThreshold float64
	BalanceAbs     int
	BalanceRel     float64
	MissRule       string
	InclusiveMatch bool
}

// Worker is one GPU worker (possibly tensor-parallel).
type Worker struct {
	Name  string
	Kind  Kind
	GPU   string // preset name, e.g. "H200-SXM"
	Model string // preset name, e.g. "qwen3-coder-30b-a3b"
	TP    int    // tensor parallel degree, >= 1 (default 1)

	// KVBudgetTokens is the KV pool size in tokens (K_d for decode workers,
	// prefix-cache capacity for prefill workers). 0 means "derive it from
	// GPU memory and MemFractionStatic" (SGLang style).
	KVBudgetTokens int
	// MemFractionStatic is SGLang's mem_fraction_static (default 0.88).
	MemFractionStatic float64
	// MaxBatchTokens is the per-iteration token budget for prefill (and the
	// chunk size for append-prefill on decode workers). Default 16384.
	MaxBatchTokens int
	// MaxRunning caps concurrently decoding requests (default 256).
	MaxRunning int
	// MaxModelLen is the context length the worker serves (vLLM's
	// max_model_len): prompt + output tokens of one request. 0 means the
	// model preset's (gpu.Model.MaxModelLen, config.json's
	// max_position_embeddings); set it to state an extended context
	// (YaRN), or a shorter one.
	MaxModelLen int
	// Fused workers: a DRAM (L1) tier of DRAMCacheTokens tokens below the
	// HBM prefix cache (0 = none); blocks evicted from HBM move there, and a
	// prefix found there is loaded back at DRAMBandwidth bytes/s (0 =
	// DefaultDRAMBandwidth, 25 GB/s, a PCIe 5.0 x16 link's order) instead
	// of being recomputed.
	DRAMCacheTokens int
	DRAMBandwidth   float64

	// Perf overrides the cost model's default efficiencies for this worker
	// (HCL: mfu, mbu, comm_efficiency, step_overhead, prefill_overhead,
	// allreduce_latency, reserved_memory). Unset fields keep the defaults.
	Perf PerfOverrides

	// Faults are the worker's crash and slow blocks (and the chaos
	// block's drawn crashes), in time order.
	Faults []NodeFault
}

// PerfOverrides are per-worker overrides of the cost model (gpu.Perf). A nil
// field is absent from the HCL and keeps the cost model's default; a set
// field replaces it, even when it is 0. The topology package checks the
// ranges it can check on its own (fractions in (0, 1], durations and sizes
// >= 0); reserved_memory below the GPU's memory is checked when the cost
// model is built.
type PerfOverrides struct {
	MFU              *float64       // fraction of peak FLOP/s when compute bound, (0, 1]
	MBU              *float64       // fraction of peak HBM bandwidth when memory bound, (0, 1]
	CommEfficiency   *float64       // fraction of the GPU interconnect an all-reduce achieves, (0, 1]
	StepOverhead     *time.Duration // fixed cost of every pass that decodes, >= 0
	PrefillOverhead  *time.Duration // fixed cost of every prefill-only pass, >= 0
	AllReduceLatency *time.Duration // fixed cost of one TP all-reduce, >= 0
	ReservedMemory   *float64       // bytes per GPU lost before the KV pool is sized, >= 0
}

// IsZero reports whether no override is set.
func (o PerfOverrides) IsZero() bool { return o == PerfOverrides{} }

// Transport of a KV link.
type Transport string

// Link transports, as written in HCL (transport = "rdma").
const (
	TransportRDMA Transport = "rdma"
	TransportTCP  Transport = "tcp"
)

// Link connects a prefill worker to a decode worker over a NIC.
type Link struct {
	From      string    // prefill worker name
	To        string    // decode worker name
	Transport Transport // rdma | tcp
	Device    string    // NIC device on the prefill side, e.g. "mlx5_0"; links that name the same device on the same prefill worker share its bandwidth
	Bandwidth float64   // line rate in bytes per second (> 0); HCL takes "200Gbps", "25GB/s", ...
	Latency   time.Duration

	// Efficiency is the fraction of Bandwidth the transport achieves, in
	// (0, 1]; 0 (absent) selects the transport's default.
	Efficiency float64
	// MaxRate caps the NIC's effective rate in bytes per second whatever
	// the line rate (host DMA path, CPU, a software KV path); 0 (absent)
	// selects the transport's default.
	MaxRate float64
	// Setup is the per-transfer setup cost paid after Latency; nil (absent)
	// selects the transport's default. It may be set to 0.
	Setup *time.Duration

	// Faults are the link's scheduled faults in file order. They act on
	// the NIC the link uses (see Spec.NICs), so they hit every link over
	// the same device.
	Faults []LinkFault
}

// Fault kinds (LinkFault.Kind), as written in HCL.
const (
	FaultDegrade = "degrade" // multiply the NIC's effective rate by Factor (compounds until a restore)
	FaultCut     = "cut"     // fail every transfer in flight, and every new one until a restore
	FaultRestore = "restore" // end a cut and every degradation
	// A flap (fault { at, flap = PERIOD, flaps = N }) is written as N
	// cuts, each restored PERIOD later, PERIOD apart.
)

// LinkFault is a scheduled change of a NIC's state, at emulated time At
// from the start of the run.
type LinkFault struct {
	At     time.Duration // >= 0
	Kind   string        // FaultDegrade, FaultCut or FaultRestore
	Factor float64       // FaultDegrade: in (0, 1]; 0 for the other kinds
	Chaos  bool          // drawn by the chaos block
}

// Router is the routing policy and its parameters, with defaults filled in.
type Router struct {
	// Policy is the router block's label ("kvc", "vanilla", or a bucket
	// local policy over one pool of fused workers), or PolicyBuckets when
	// routing is described by Spec.Buckets, GlobalRouter and LocalRouter.
	Policy string

	// KVC-Router hyperparameters (spec defaults in parentheses).
	Alpha       float64 // sticky bonus α (1)
	TauReject   int     // blacklist threshold τ_reject (3)
	TauAppend   int     // max append tokens for Direct τ_append (8192)
	Rho         float64 // capacity high-water mark ρ (0.95)
	Epsilon     int     // max Route→Admit tries before Fallback ε (HCL default |D|, spec §2.4; DefaultRouter's 2 is §7's 1P3D value)
	BlockTokens int     // router block size in tokens (24); a trace's own block size wins when it has one
	V1          bool    // omit reset-on-success (reproduces the v1 thrashing pathology)
	// AllBlacklisted is the kvc router's reading of the case where every
	// untried decode worker blacklists the session (topology/kvcv1.go):
	// AllBlacklistedDegenerate (spec §3.4; the default with V1) or
	// AllBlacklistedLeastRejected (Algorithm 1 lines 3–4; the default
	// otherwise). "" for other policies.
	AllBlacklisted string
	ReserveOutput  bool // admission also reserves output tokens (true); false = literal Algorithm 2
	// NetCapacity makes Algorithm 2's capacity check count a resident
	// session's own KV once: used − resident(s) + input_len ≤ ρ·K_d
	// (false, the default, is the literal used + input_len ≤ ρ·K_d, which
	// counts the session's resident prefix twice since input_len includes it).
	NetCapacity bool
	// ResidentAppend measures append_len against the decode worker's last
	// admitted prompt of the session (pdemu before issue 10); false, the
	// default, uses the spec's append_len (§2.2: new since the previous turn).
	ResidentAppend bool
	// PrefillCacheBackup lets P's prefix cache (which Fallbacks refresh)
	// serve a reseed; false, the default, models P's backup as the spec's
	// seed-time snapshot (§9 Q4), so a reseed re-prefills every token
	// appended since the session's last Seed/Reseed.
	PrefillCacheBackup bool
	// DPSync streams each Direct turn's new KV from the decode worker back
	// to the session's backup on its prefill worker over their link (D→P
	// incremental sync, the spec's §9 Q4 future work; false by default).
	DPSync bool
	// OwnOverlap and LoadFloor are opt-in remedies for sessions crowding
	// onto the decode workers that hold a shared first block (false and 0,
	// the defaults, are Algorithm 1 literally; policy.KVCConfig).
	OwnOverlap bool
	LoadFloor  int
	// RoutingLog keeps the P/D router's decisions for routing_log.jsonl
	// (true); false writes it empty and skips the work. LogCandidates
	// bounds the candidates listed per try (8): the top ones by
	// Algorithm 1's key, the chosen one always (docs/OUTPUTS.md).
	RoutingLog    bool
	LogCandidates int
}

// Clock modes.
const (
	ClockVirtual = "virtual"
	ClockWall    = "wall"
)

// Loop modes for session replay.
const (
	LoopOpen   = "open"
	LoopClosed = "closed"
)

// Workload says what requests to replay and how time runs.
type Workload struct {
	// Trace is a trace file or directory (resolved, absolute or relative to
	// the working directory). Empty means "use Generator".
	Trace  string
	Format string      // trace format name, "" = detect
	Replay TraceReplay // trace options (only with Trace)

	Generator Generator // used when Trace is empty

	Clock          string        // "virtual" (default) | "wall"
	TimeScale      float64       // wall mode: emulated d fires after d/TimeScale real time (default 1)
	Seed           uint64        // default 1
	MaxRequests    int           // 0 = all
	Loop           string        // "open" | "closed" (default closed)
	SampleInterval time.Duration // instances.csv sampling interval (default 1s)
	// ClientCap caps the requests the replay client keeps outstanding
	// (0 = none): the KVC paper's "concurrency 32" (workload.WithClientCap).
	ClientCap int
}

// TraceReplay holds the trace loader options of the workload block.
type TraceReplay struct {
	SkipBad bool // skip and count malformed records instead of failing
	// Session starts for per-session traces (claude-code, tracelab); at
	// most one of SessionRate, MaxConcurrent and TraceTime is set.
	SessionRate   float64 // Poisson session starts, sessions per second
	MaxConcurrent int     // staggered starts with at most this many overlapping sessions
	TraceTime     bool    // tracelab: keep the recorded session start times
	SharePrefix   bool    // share the tools+system prefix blocks across sessions
	InferSessions bool    // mooncake: requests extending an earlier prompt continue its session
}

// Generator configures the seeded synthetic agentic workload.
type Generator struct {
	Sessions       int           // number of sessions (default 16)
	Turns          int           // turns per session (default 24)
	SystemTokens   int           // shared system+tools prefix (default 4000)
	FirstTokens    int           // first user message after the system prefix (default 2000)
	AppendTokens   int           // mean tokens appended per turn (tool results, user text) (default 600)
	OutputTokens   int           // mean output tokens per turn (default 150)
	ThinkTime      time.Duration // mean think/tool time between turns (default 2.5s)
	SessionStagger time.Duration // mean gap between session starts (default 1s)
	BlockTokens    int           // block size of the generated hashes (default 24)

	// Kind is the generator block's label: "" or "agentic" (the fields
	// above), "swebench" (workload.NewSWEBench: Sessions, Requests,
	// Content, ActiveSessions, BlockTokens; 0 = its defaults) or "burst"
	// (workload.NewBurst, no parameters).
	Kind           string
	Content        string // swebench content model ("paper", "v0", "v1-stress")
	Requests       int    // swebench total requests
	ActiveSessions int    // swebench: sessions kept active at once (0 = the real timeline)
	// SWEBench are the swebench content-model attributes the scenario set
	// (topology/swebench_params.go; nil fields: the content model's defaults).
	SWEBench SWEBenchParams
}

package topology

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// This file holds the gohcl decoding targets. They mirror the HCL format
// one to one; every attribute carries its source range so that semantic
// errors can point at it. Optional attributes are pointers: nil means
// "absent, use the default".

// variablesHCL is the first decoding pass: only the variable blocks; the
// rest of the body is decoded once the variables are known.
type variablesHCL struct {
	Variables []variableHCL `hcl:"variable,block"`
	Remain    hcl.Body      `hcl:",remain"`
}

type variableHCL struct {
	Name        string         `hcl:"name,label"`
	NameRange   hcl.Range      `hcl:"name,label_range"`
	DefRange    hcl.Range      `hcl:",def_range"`
	Default     *hcl.Attribute `hcl:"default,optional"`
	Description *string        `hcl:"description,optional"`
}

// fileHCL is everything but the variable blocks.
type fileHCL struct {
	Name      *string   `hcl:"name,optional"`
	NameRange hcl.Range `hcl:"name,attr_range"`

	Prefill   []workerHCL   `hcl:"prefill,block"`
	Decode    []workerHCL   `hcl:"decode,block"`
	Fused     []workerHCL   `hcl:"fused,block"`
	Links     []linkHCL     `hcl:"link,block"`
	Mesh      []meshHCL     `hcl:"mesh,block"` // mesh.go
	Routers   []routerHCL   `hcl:"router,block"`
	Workloads []workloadHCL `hcl:"workload,block"`

	// Bucket routing (see Spec.Buckets).
	Buckets       []bucketHCL `hcl:"bucket,block"`
	GlobalRouters []routerHCL `hcl:"global_router,block"`
	LocalRouters  []routerHCL `hcl:"local_router,block"`

	// Faults (nodefaults.go): how the routers notice and retry, and random
	// fault schedules.
	Recovery []recoveryHCL `hcl:"recovery,block"`
	Chaos    []chaosHCL    `hcl:"chaos,block"`

	// The run's service-level objective (slo.go).
	SLOs []sloHCL `hcl:"slo,block"`
}

// bucketHCL is a bucket block. Its attributes are kept as expressions so
// that diagnostics can point at one element of a list.
type bucketHCL struct {
	Name      string    `hcl:"name,label"`
	NameRange hcl.Range `hcl:"name,label_range"`
	DefRange  hcl.Range `hcl:",def_range"`
	Body      hcl.Body  `hcl:",body"` // for MissingItemRange

	// Both are required; gohcl treats hcl.Expression fields as optional
	// (a null expression when absent), so absence is checked by hand.
	InputTokens      hcl.Expression `hcl:"input_tokens"`
	InputTokensRange hcl.Range      `hcl:"input_tokens,attr_range"`
	Instances        hcl.Expression `hcl:"instances"`
	InstancesRange   hcl.Range      `hcl:"instances,attr_range"`

	// Optional: RDMA fabric between the bucket's instances for remote
	// prefix fetches (absent = no remote fetch).
	RemoteFetchBandwidth      *string   `hcl:"remote_fetch_bandwidth,optional"`
	RemoteFetchBandwidthRange hcl.Range `hcl:"remote_fetch_bandwidth,attr_range"`

	Crashes []crashHCL `hcl:"crash,block"`
}

// workerHCL is a prefill, decode or fused block. The attributes a kind
// does not take are rejected by the checker (checker.worker): max_running
// on a prefill worker, the DRAM tier on any but a fused one.
type workerHCL struct {
	Name      string    `hcl:"name,label"`
	NameRange hcl.Range `hcl:"name,label_range"`
	DefRange  hcl.Range `hcl:",def_range"`

	GPU                    string    `hcl:"gpu"`
	GPURange               hcl.Range `hcl:"gpu,attr_range"`
	Model                  string    `hcl:"model"`
	ModelRange             hcl.Range `hcl:"model,attr_range"`
	TP                     *int      `hcl:"tp,optional"`
	TPRange                hcl.Range `hcl:"tp,attr_range"`
	KVBudgetTokens         *int      `hcl:"kv_budget_tokens,optional"`
	KVBudgetTokensRange    hcl.Range `hcl:"kv_budget_tokens,attr_range"`
	MemFractionStatic      *float64  `hcl:"mem_fraction_static,optional"`
	MemFractionStaticRange hcl.Range `hcl:"mem_fraction_static,attr_range"`
	MaxBatchTokens         *int      `hcl:"max_batch_tokens,optional"`
	MaxBatchTokensRange    hcl.Range `hcl:"max_batch_tokens,attr_range"`
	MaxModelLen            *int      `hcl:"max_model_len,optional"`
	MaxModelLenRange       hcl.Range `hcl:"max_model_len,attr_range"`
	MaxRunning             *int      `hcl:"max_running,optional"`
	MaxRunningRange        hcl.Range `hcl:"max_running,attr_range"`
	// Fused workers only: a DRAM (L1) prefix-cache tier below the HBM one.
	DRAMCacheTokens      *int      `hcl:"dram_cache_tokens,optional"`
	DRAMCacheTokensRange hcl.Range `hcl:"dram_cache_tokens,attr_range"`
	DRAMBandwidth        *string   `hcl:"dram_bandwidth,optional"`
	DRAMBandwidthRange   hcl.Range `hcl:"dram_bandwidth,attr_range"`

	// Cost-model overrides (see PerfOverrides).
	MFU                   *float64  `hcl:"mfu,optional"`
	MFURange              hcl.Range `hcl:"mfu,attr_range"`
	MBU                   *float64  `hcl:"mbu,optional"`
	MBURange              hcl.Range `hcl:"mbu,attr_range"`
	CommEfficiency        *float64  `hcl:"comm_efficiency,optional"`
	CommEfficiencyRange   hcl.Range `hcl:"comm_efficiency,attr_range"`
	StepOverhead          *string   `hcl:"step_overhead,optional"`
	StepOverheadRange     hcl.Range `hcl:"step_overhead,attr_range"`
	PrefillOverhead       *string   `hcl:"prefill_overhead,optional"`
	PrefillOverheadRange  hcl.Range `hcl:"prefill_overhead,attr_range"`
	AllReduceLatency      *string   `hcl:"allreduce_latency,optional"`
	AllReduceLatencyRange hcl.Range `hcl:"allreduce_latency,attr_range"`
	// ReservedMemory is a size string ("1.1GiB"); a number converts to a
	// string of bytes.
	ReservedMemory      *string   `hcl:"reserved_memory,optional"`
	ReservedMemoryRange hcl.Range `hcl:"reserved_memory,attr_range"`

	// Node faults (nodefaults.go).
	Crashes []crashHCL `hcl:"crash,block"`
	Slows   []slowHCL  `hcl:"slow,block"`
}

type linkHCL struct {
	From      string    `hcl:"from,label"`
	FromRange hcl.Range `hcl:"from,label_range"`
	To        string    `hcl:"to,label"`
	ToRange   hcl.Range `hcl:"to,label_range"`
	DefRange  hcl.Range `hcl:",def_range"`

	Transport      string    `hcl:"transport"`
	TransportRange hcl.Range `hcl:"transport,attr_range"`
	Device         string    `hcl:"device"`
	DeviceRange    hcl.Range `hcl:"device,attr_range"`
	Bandwidth      string    `hcl:"bandwidth"`
	BandwidthRange hcl.Range `hcl:"bandwidth,attr_range"`
	Latency        *string   `hcl:"latency,optional"`
	LatencyRange   hcl.Range `hcl:"latency,attr_range"`

	Efficiency      *float64  `hcl:"efficiency,optional"`
	EfficiencyRange hcl.Range `hcl:"efficiency,attr_range"`
	MaxRate         *string   `hcl:"max_rate,optional"`
	MaxRateRange    hcl.Range `hcl:"max_rate,attr_range"`
	Setup           *string   `hcl:"setup,optional"`
	SetupRange      hcl.Range `hcl:"setup,attr_range"`

	Faults []faultHCL `hcl:"fault,block"`
}

// faultHCL is a fault block inside a link: at, and exactly one of degrade,
// cut and restore.
type faultHCL struct {
	DefRange hcl.Range `hcl:",def_range"`
	Body     hcl.Body  `hcl:",body"` // for its range: see bodyRange

	At           string    `hcl:"at"`
	AtRange      hcl.Range `hcl:"at,attr_range"`
	Degrade      *float64  `hcl:"degrade,optional"`
	DegradeRange hcl.Range `hcl:"degrade,attr_range"`
	Cut          *bool     `hcl:"cut,optional"`
	CutRange     hcl.Range `hcl:"cut,attr_range"`
	Restore      *bool     `hcl:"restore,optional"`
	RestoreRange hcl.Range `hcl:"restore,attr_range"`
	// Flap: cut for Flap, restored for Flap, Flaps times from At.
	Flap       *string   `hcl:"flap,optional"`
	FlapRange  hcl.Range `hcl:"flap,attr_range"`
	Flaps      *int      `hcl:"flaps,optional"`
	FlapsRange hcl.Range `hcl:"flaps,attr_range"`
}

// routerHCL keeps the body undecoded: its schema depends on the policy label
// (see policies in router.go; global_router and local_router blocks too,
// see buckets.go).
type routerHCL struct {
	Policy      string    `hcl:"policy,label"`
	PolicyRange hcl.Range `hcl:"policy,label_range"`
	DefRange    hcl.Range `hcl:",def_range"`
	Body        hcl.Body  `hcl:",remain"`
}

type workloadHCL struct {
	DefRange hcl.Range `hcl:",def_range"`

	Clock               *string   `hcl:"clock,optional"`
	ClockRange          hcl.Range `hcl:"clock,attr_range"`
	TimeScale           *float64  `hcl:"time_scale,optional"`
	TimeScaleRange      hcl.Range `hcl:"time_scale,attr_range"`
	Seed                cty.Value `hcl:"seed,optional"` // a whole number (checkSeed)
	SeedRange           hcl.Range `hcl:"seed,attr_range"`
	Loop                *string   `hcl:"loop,optional"`
	LoopRange           hcl.Range `hcl:"loop,attr_range"`
	MaxRequests         *int      `hcl:"max_requests,optional"`
	MaxRequestsRange    hcl.Range `hcl:"max_requests,attr_range"`
	SampleInterval      *string   `hcl:"sample_interval,optional"`
	SampleIntervalRange hcl.Range `hcl:"sample_interval,attr_range"`
	Trace               *string   `hcl:"trace,optional"`
	TraceRange          hcl.Range `hcl:"trace,attr_range"`
	Format              *string   `hcl:"format,optional"`
	FormatRange         hcl.Range `hcl:"format,attr_range"`

	// Trace replay options (only with trace).
	SkipBad            *bool     `hcl:"skip_bad,optional"`
	SkipBadRange       hcl.Range `hcl:"skip_bad,attr_range"`
	SessionRate        *float64  `hcl:"session_rate,optional"`
	SessionRateRange   hcl.Range `hcl:"session_rate,attr_range"`
	MaxConcurrent      *int      `hcl:"max_concurrent,optional"`
	MaxConcurrentRange hcl.Range `hcl:"max_concurrent,attr_range"`
	SharePrefix        *bool     `hcl:"share_prefix,optional"`
	SharePrefixRange   hcl.Range `hcl:"share_prefix,attr_range"`
	InferSessions      *bool     `hcl:"infer_sessions,optional"`
	InferSessionsRange hcl.Range `hcl:"infer_sessions,attr_range"`
	TraceTime          *bool     `hcl:"trace_time,optional"`
	TraceTimeRange     hcl.Range `hcl:"trace_time,attr_range"`

	// Client concurrency cap (topology/kvcpaper.go).
	ClientCap      *int      `hcl:"client_cap,optional"`
	ClientCapRange hcl.Range `hcl:"client_cap,attr_range"`

	Generators []generatorHCL `hcl:"generator,block"`
}

type generatorHCL struct {
	Kind      string    `hcl:"kind,label"`
	KindRange hcl.Range `hcl:"kind,label_range"`
	DefRange  hcl.Range `hcl:",def_range"`

	Sessions            *int      `hcl:"sessions,optional"`
	SessionsRange       hcl.Range `hcl:"sessions,attr_range"`
	Turns               *int      `hcl:"turns,optional"`
	TurnsRange          hcl.Range `hcl:"turns,attr_range"`
	SystemTokens        *int      `hcl:"system_tokens,optional"`
	SystemTokensRange   hcl.Range `hcl:"system_tokens,attr_range"`
	FirstTokens         *int      `hcl:"first_tokens,optional"`
	FirstTokensRange    hcl.Range `hcl:"first_tokens,attr_range"`
	AppendTokens        *int      `hcl:"append_tokens,optional"`
	AppendTokensRange   hcl.Range `hcl:"append_tokens,attr_range"`
	OutputTokens        *int      `hcl:"output_tokens,optional"`
	OutputTokensRange   hcl.Range `hcl:"output_tokens,attr_range"`
	ThinkTime           *string   `hcl:"think_time,optional"`
	ThinkTimeRange      hcl.Range `hcl:"think_time,attr_range"`
	SessionStagger      *string   `hcl:"session_stagger,optional"`
	SessionStaggerRange hcl.Range `hcl:"session_stagger,attr_range"`
	BlockTokens         *int      `hcl:"block_tokens,optional"`
	BlockTokensRange    hcl.Range `hcl:"block_tokens,attr_range"`

	// generator "swebench" (topology/kvcpaper.go).
	Content             *string   `hcl:"content,optional"`
	ContentRange        hcl.Range `hcl:"content,attr_range"`
	Requests            *int      `hcl:"requests,optional"`
	RequestsRange       hcl.Range `hcl:"requests,attr_range"`
	ActiveSessions      *int      `hcl:"active_sessions,optional"`
	ActiveSessionsRange hcl.Range `hcl:"active_sessions,attr_range"`

	// generator "swebench"'s content-model parameters (topology/swebench_params.go).
	DurationAttr         *string   `hcl:"duration,optional"`
	DurationRange        hcl.Range `hcl:"duration,attr_range"`
	GapP50Attr           *string   `hcl:"gap_p50,optional"`
	GapP50Range          hcl.Range `hcl:"gap_p50,attr_range"`
	GapSigmaAttr         *float64  `hcl:"gap_sigma,optional"`
	GapSigmaRange        hcl.Range `hcl:"gap_sigma,attr_range"`
	TurnsSigmaAttr       *float64  `hcl:"turns_sigma,optional"`
	TurnsSigmaRange      hcl.Range `hcl:"turns_sigma,attr_range"`
	MinTurnsAttr         *int      `hcl:"min_turns,optional"`
	MinTurnsRange        hcl.Range `hcl:"min_turns,attr_range"`
	IssueTokensAttr      *int      `hcl:"issue_tokens,optional"`
	IssueTokensRange     hcl.Range `hcl:"issue_tokens,attr_range"`
	IssueSigmaAttr       *float64  `hcl:"issue_sigma,optional"`
	IssueSigmaRange      hcl.Range `hcl:"issue_sigma,attr_range"`
	AppendP50Attr        *int      `hcl:"append_p50,optional"`
	AppendP50Range       hcl.Range `hcl:"append_p50,attr_range"`
	AppendSigmaAttr      *float64  `hcl:"append_sigma,optional"`
	AppendSigmaRange     hcl.Range `hcl:"append_sigma,attr_range"`
	MidAppendProbAttr    *float64  `hcl:"mid_append_prob,optional"`
	MidAppendProbRange   hcl.Range `hcl:"mid_append_prob,attr_range"`
	MidAppendMinAttr     *int      `hcl:"mid_append_min,optional"`
	MidAppendMinRange    hcl.Range `hcl:"mid_append_min,attr_range"`
	MidAppendMaxAttr     *int      `hcl:"mid_append_max,optional"`
	MidAppendMaxRange    hcl.Range `hcl:"mid_append_max,attr_range"`
	LargeAppendProbAttr  *float64  `hcl:"large_append_prob,optional"`
	LargeAppendProbRange hcl.Range `hcl:"large_append_prob,attr_range"`
	LargeAppendMinAttr   *int      `hcl:"large_append_min,optional"`
	LargeAppendMinRange  hcl.Range `hcl:"large_append_min,attr_range"`
	LargeAppendMaxAttr   *int      `hcl:"large_append_max,optional"`
	LargeAppendMaxRange  hcl.Range `hcl:"large_append_max,attr_range"`
	OutputP50Attr        *int      `hcl:"output_p50,optional"`
	OutputP50Range       hcl.Range `hcl:"output_p50,attr_range"`
	OutputSigmaAttr      *float64  `hcl:"output_sigma,optional"`
	OutputSigmaRange     hcl.Range `hcl:"output_sigma,attr_range"`
	MaxOutputAttr        *int      `hcl:"max_output,optional"`
	MaxOutputRange       hcl.Range `hcl:"max_output,attr_range"`
	MaxContextAttr       *int      `hcl:"max_context,optional"`
	MaxContextRange      hcl.Range `hcl:"max_context,attr_range"`
	CondensedTokensAttr  *int      `hcl:"condensed_tokens,optional"`
	CondensedTokensRange hcl.Range `hcl:"condensed_tokens,attr_range"`
	ServiceBaseAttr      *string   `hcl:"service_base,optional"`
	ServiceBaseRange     hcl.Range `hcl:"service_base,attr_range"`
	TokenTimeAttr        *string   `hcl:"token_time,optional"`
	TokenTimeRange       hcl.Range `hcl:"token_time,attr_range"`
}

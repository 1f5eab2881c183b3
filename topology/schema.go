package topology

import "github.com/hashicorp/hcl/v2"

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

	Prefill   []prefillHCL  `hcl:"prefill,block"`
	Decode    []workerHCL   `hcl:"decode,block"`
	Fused     []workerHCL   `hcl:"fused,block"`
	Links     []linkHCL     `hcl:"link,block"`
	Routers   []routerHCL   `hcl:"router,block"`
	Workloads []workloadHCL `hcl:"workload,block"`
}

// prefillHCL is a prefill block: a worker without max_running.
type prefillHCL struct {
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
}

// workerHCL is a decode or fused block.
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
	MaxRunning             *int      `hcl:"max_running,optional"`
	MaxRunningRange        hcl.Range `hcl:"max_running,attr_range"`
}

func (p prefillHCL) worker() workerHCL {
	return workerHCL{
		Name: p.Name, NameRange: p.NameRange, DefRange: p.DefRange,
		GPU: p.GPU, GPURange: p.GPURange,
		Model: p.Model, ModelRange: p.ModelRange,
		TP: p.TP, TPRange: p.TPRange,
		KVBudgetTokens: p.KVBudgetTokens, KVBudgetTokensRange: p.KVBudgetTokensRange,
		MemFractionStatic: p.MemFractionStatic, MemFractionStaticRange: p.MemFractionStaticRange,
		MaxBatchTokens: p.MaxBatchTokens, MaxBatchTokensRange: p.MaxBatchTokensRange,
	}
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
}

// routerHCL keeps the body undecoded: its schema depends on the policy label
// (see policies in router.go).
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
	Seed                *uint64   `hcl:"seed,optional"`
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
}

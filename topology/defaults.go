package topology

import (
	"time"
)

// Worker defaults.
const (
	DefaultTP                = 1
	DefaultMemFractionStatic = 0.88
	DefaultMaxBatchTokens    = 16384
	DefaultMaxRunning        = 256
)

// DefaultLatency is a link's latency when the HCL does not say.
const DefaultLatency = 10 * time.Microsecond

// DefaultWorker returns a worker with every optional field at its default
// (KVBudgetTokens 0 = derive from GPU memory).
func DefaultWorker(name string, kind Kind, gpu, model string) Worker {
	return Worker{
		Name:              name,
		Kind:              kind,
		GPU:               gpu,
		Model:             model,
		TP:                DefaultTP,
		MemFractionStatic: DefaultMemFractionStatic,
		MaxBatchTokens:    DefaultMaxBatchTokens,
		MaxRunning:        DefaultMaxRunning,
	}
}

// DefaultGenerator returns the synthetic agentic workload defaults.
func DefaultGenerator() Generator {
	return Generator{
		Sessions:       16,
		Turns:          24,
		SystemTokens:   4000,
		FirstTokens:    2000,
		AppendTokens:   600,
		OutputTokens:   150,
		ThinkTime:      2500 * time.Millisecond,
		SessionStagger: time.Second,
		BlockTokens:    24,
	}
}

// DefaultWorkload returns the workload used when a scenario has no workload
// block: the default generator on the virtual clock, closed loop.
func DefaultWorkload() Workload {
	return Workload{
		Generator:      DefaultGenerator(),
		Clock:          ClockVirtual,
		TimeScale:      1,
		Seed:           1,
		Loop:           LoopClosed,
		SampleInterval: time.Second,
	}
}

// DefaultDRAMBandwidth is the DRAM-tier load rate (bytes/s): a PCIe 5.0
// x16 link's order of magnitude.
const DefaultDRAMBandwidth = 25e9

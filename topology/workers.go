package topology

import (
	"github.com/hashicorp/hcl/v2"
)

func (c *checker) worker(kind Kind, wh *workerHCL) Worker {
	w := DefaultWorker(wh.Name, kind, wh.GPU, wh.Model)
	c.checkPreset(wh.GPU, wh.GPURange, "GPU", "gpu", c.opts.KnownGPU, c.opts.GPUNames)
	c.checkPreset(wh.Model, wh.ModelRange, "model", "model", c.opts.KnownModel, c.opts.ModelNames)
	w.TP = checkNum(c, wh.TP, wh.TPRange, w.TP, "tp", "tensor-parallel degree", between(1, MaxTP))
	if wh.TP != nil && c.opts.ValidTP != nil && (c.opts.KnownModel == nil || c.opts.KnownModel(wh.Model)) {
		if err := c.opts.ValidTP(wh.Model, w.TP); err != nil {
			c.errorf(wh.TPRange, `Invalid value for "tp"`, "%v.", err)
		}
	}
	w.KVBudgetTokens = checkNum(c, wh.KVBudgetTokens, wh.KVBudgetTokensRange, 0, "kv_budget_tokens",
		"KV pool size in tokens; 0 derives it from GPU memory", between(0, MaxPoolTokens))
	w.MemFractionStatic = checkNum(c, wh.MemFractionStatic, wh.MemFractionStaticRange, w.MemFractionStatic,
		"mem_fraction_static", "fraction of GPU memory for weights and KV pool", unitInterval)
	w.MaxBatchTokens = checkNum(c, wh.MaxBatchTokens, wh.MaxBatchTokensRange, w.MaxBatchTokens,
		"max_batch_tokens", "per-iteration token budget", between(1, MaxRequestTokens))
	if kind == KindPrefill {
		if wh.MaxRunning != nil { // as gohcl reports an attribute outside the schema
			c.errorf(wh.MaxRunningRange, "Unsupported argument",
				"An argument named %q is not expected here: it caps the requests a decode or fused worker decodes at once.", "max_running")
		}
	} else {
		w.MaxRunning = checkNum(c, wh.MaxRunning, wh.MaxRunningRange, w.MaxRunning,
			"max_running", "cap on concurrently decoding requests", between(1, MaxRunning))
	}
	w.MaxModelLen = checkNum(c, wh.MaxModelLen, wh.MaxModelLenRange, 0, "max_model_len",
		"context length served (prompt + output tokens); 0 = the model preset's", between(0, MaxContextTokens))
	if kind != KindFused {
		for _, a := range []struct {
			set  bool
			rng  hcl.Range
			name string
		}{{wh.DRAMCacheTokens != nil, wh.DRAMCacheTokensRange, "dram_cache_tokens"}, {wh.DRAMBandwidth != nil, wh.DRAMBandwidthRange, "dram_bandwidth"}} {
			if a.set {
				c.errorf(a.rng, "DRAM tier on a "+string(kind)+" worker",
					"%q configures the DRAM (L1) prefix-cache tier of a fused worker; %s workers have none.", a.name, kind)
			}
		}
	} else {
		w.DRAMCacheTokens = checkNum(c, wh.DRAMCacheTokens, wh.DRAMCacheTokensRange, 0, "dram_cache_tokens",
			"DRAM (L1) prefix-cache tier in tokens; 0 = none", between(0, MaxPoolTokens))
		w.DRAMBandwidth, _ = c.checkBandwidth(wh.DRAMBandwidth, wh.DRAMBandwidthRange, w.DRAMBandwidth,
			"dram_bandwidth", "how fast a prefix is loaded back from the DRAM tier")
	}
	w.Perf = PerfOverrides{
		MFU: c.optFraction(wh.MFU, wh.MFURange, "mfu",
			"achieved fraction of peak FLOP/s when compute bound"),
		MBU: c.optFraction(wh.MBU, wh.MBURange, "mbu",
			"achieved fraction of peak HBM bandwidth when memory bound"),
		CommEfficiency: c.optFraction(wh.CommEfficiency, wh.CommEfficiencyRange, "comm_efficiency",
			"achieved fraction of the GPU interconnect bandwidth in TP all-reduces"),
		StepOverhead: c.optDuration(wh.StepOverhead, wh.StepOverheadRange, "step_overhead",
			"fixed cost of every forward pass that decodes"),
		PrefillOverhead: c.optDuration(wh.PrefillOverhead, wh.PrefillOverheadRange, "prefill_overhead",
			"fixed cost of every prefill-only forward pass"),
		AllReduceLatency: c.optDuration(wh.AllReduceLatency, wh.AllReduceLatencyRange, "allreduce_latency",
			"fixed cost of one tensor-parallel all-reduce"),
		ReservedMemory: c.optSize(wh.ReservedMemory, wh.ReservedMemoryRange, "reserved_memory",
			"memory per GPU taken before the KV pool is sized, e.g. \"1.1GiB\""),
	}
	w.Faults = c.nodeFaults(wh.Crashes, wh.Slows)
	return w
}

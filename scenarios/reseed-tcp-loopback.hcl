# reseed-tcp-loopback.hcl -- the KVC-Router paper's evaluation setting, where
# a reseed costs seconds.
#
# The paper ran 1P3D on one node: one prefill and three decode SGLang
# workers of Qwen3-Coder-30B-A3B, each on one 80 GB Hopper GPU (H100 SXM
# here), K_d = 92104 tokens per decode worker, KVC-Router, and KV moved by
# Mooncake's TCP transport over loopback. It reports a reseed (a session
# whose KV was evicted from its decode worker comes back: the prefill worker
# recomputes the whole context and ships it to a decode worker) costing
# 3-7 s, made of a re-prefill of 1.5-3 s and a P->D transfer of 1.5-4 s
# (shared/seeds/000_*, open question 3). This scenario sets the cost and link
# models so that a typical agentic reseed of 40-60K tokens costs that much:
#
#   re-prefill   prefill "p0" mfu = 0.57                 (gpu/perf.go model)
#                  40K tokens 1.5 s, 50K 2.23 s, 60K 3.09 s (cold prefix)
#   transfer     link max_rate = "1.5GB/s" on a tcp link  (transfer/ model)
#                  98,304 B/token: 40K 2.62 s, 50K 3.28 s, 60K 3.93 s
#
# Both sets of figures are checked by scenarios_test.go
# (TestReseedTCPLoopbackCosts), which rebuilds the two cost models from this
# file. Everything else is the default cost model. The re-prefill figures
# are for a cold context: p0's prefix cache (~92K tokens) holds the
# contexts it prefilled last, and only uncached tokens are recomputed, so a
# reseed of a recently prefilled session re-prefills less; the transfer
# always moves the whole context.
#
# Override the variables below with -var NAME=VALUE (e.g. -var sessions=8,
# -var path_rate=2GB/s, -var prefill_mfu=0.35).

name = "reseed-tcp-loopback"

variable "sessions" {
  description = "Number of concurrent agentic sessions."
  default     = 4
}

variable "seed" {
  description = "Workload RNG seed; identical inputs and seed give identical virtual runs."
  default     = 42
}

variable "prefill_mfu" {
  description = "MFU of the prefill worker (cost-model default 0.35)."
  default     = 0.57
}

variable "path_rate" {
  description = "Rate of the loopback TCP KV path (transfer/calibration_test.go: 1.5-2 GB/s)."
  default     = "1.5GB/s"
}

# ---------------------------------------------------------------------------
# Workers: qwen3-coder-30b-a3b on one H100 SXM each (TP 1).
# ---------------------------------------------------------------------------

prefill "p0" {
  gpu   = "H100-SXM"
  model = "qwen3-coder-30b-a3b"

  # Re-prefill time. The default MFU (0.35, gpu/perf.go DefaultMFU) is
  # fitted to vLLM/SGLang measurements at <= 32K tokens; at 40-60K tokens
  # about 78 % of this model's prefill FLOPs are causal attention (e.g.
  # 50K tokens: 9.8e14 of 1.26e15 FLOPs), and with 0.35 a cold 50K / 60K
  # prefill takes 3.63 s / 5.04 s, above the paper's 1.5-3 s. 0.57 is the
  # value that puts 40-60K tokens at 1.5-3.09 s: a fit to the paper's
  # range, not a measurement. (gpu/perf_test.go TestReseedPrefillScale
  # checks that the default gives 1.5-3 s for 32-40K tokens.)
  mfu = var.prefill_mfu

  # Prefix cache (only uncached tokens are re-prefilled): sized SGLang-style
  # like the paper's workers, mem_fraction_static = 0.835. reserved_memory
  # is the memory SGLang never sees (CUDA context, workspaces, load-time
  # buffers); 1.44 GiB instead of the 1.1 GiB default reproduces the
  # paper's 92,104-token pool on an 80 GB H100 (gpu/perf_test.go
  # TestPoolTokensKVCPaper), here 92,107 tokens.
  mem_fraction_static = 0.835
  reserved_memory     = "1.44GiB"
}

# K_d = 92104, the pool SGLang reported (mem_fraction_static = 0.835). The
# other cost-model attributes a worker takes are shown commented out with
# their defaults (gpu/perf.go); see docs/MODEL.md.
decode "d0" {
  gpu              = "H100-SXM"
  model            = "qwen3-coder-30b-a3b"
  kv_budget_tokens = 92104
  # mfu               = 0.35
  # mbu               = 0.6      # decode is memory bound: this sets the step time
  # comm_efficiency   = 0.6      # TP > 1 only
  # allreduce_latency = "18us"   # TP > 1 only
  # step_overhead     = "1.26ms"
  # prefill_overhead  = "1.26ms"
  # reserved_memory   = "1.1GiB" # only used when kv_budget_tokens is absent
}

decode "d1" {
  gpu              = "H100-SXM"
  model            = "qwen3-coder-30b-a3b"
  kv_budget_tokens = 92104
}

decode "d2" {
  gpu              = "H100-SXM"
  model            = "qwen3-coder-30b-a3b"
  kv_budget_tokens = 92104
}

# ---------------------------------------------------------------------------
# KV links: Mooncake TCP over loopback.
#
# The 1.5-4 s the paper measured is not bound by a NIC or the kernel
# (default TCP on a 200 Gb/s NIC moves 50K tokens in ~0.6 s): it is the
# Python KV path of the TCP transport at ~1.5-2 GB/s
# (transfer/calibration_test.go TestCalibrationKVCReseed). So the link is a
# tcp NIC whose rate ceiling max_rate is that path's rate; bandwidth is the
# nominal line rate and does not bind (the transport's default efficiency,
# 0.33, gives 8.25 GB/s). Equivalent: efficiency = 0.06 without max_rate.
#
# The three links name the same device "lo" on p0, so they are ONE NIC:
# concurrent transfers share its 1.5 GB/s (processor sharing), and the
# transfer times above are for a transfer alone on it. Links over one device
# must agree on transport, bandwidth, latency, efficiency, max_rate and setup.
# ---------------------------------------------------------------------------

link "p0" "d0" {
  transport = "tcp"
  device    = "lo"
  bandwidth = "200Gbps"      # nominal; max_rate binds
  max_rate  = var.path_rate  # the loopback Python KV path
  latency   = "50us"
  # setup   = "1ms"          # per-transfer fixed cost (tcp default)
  # efficiency = 0.33        # fraction of bandwidth achieved (tcp default)

  # Fault experiments: faults act on the link's NIC (here all three links).
  # Exactly one of degrade / cut / restore per block; at is emulated time.
  # A cut fails every transfer in flight with reason "link: ...".
  # fault {
  #   at      = "30s"
  #   degrade = 0.5   # rate x 0.5 until a restore (degradations compound)
  # }
  # fault {
  #   at  = "60s"
  #   cut = true
  # }
  # fault {
  #   at      = "90s"
  #   restore = true  # ends the cut and every degradation
  # }
}

link "p0" "d1" {
  transport = "tcp"
  device    = "lo"
  bandwidth = "200Gbps"
  max_rate  = var.path_rate
  latency   = "50us"
}

link "p0" "d2" {
  transport = "tcp"
  device    = "lo"
  bandwidth = "200Gbps"
  max_rate  = var.path_rate
  latency   = "50us"
}

# ---------------------------------------------------------------------------
# Router: KVC-Router with the paper's parameters (all defaults).
# ---------------------------------------------------------------------------

router "kvc" {
  alpha      = 1
  tau_reject = 3
  tau_append = 8192
  rho        = 0.95
  epsilon    = 2
}

# ---------------------------------------------------------------------------
# Workload: a few long agentic sessions whose contexts grow from ~12K to
# ~50K tokens over 32 turns. Three 87.5K-token admission caps (rho * K_d)
# cannot keep them all resident once they pass ~40K, so sessions get
# evicted and come back as 40-60K-token reseeds, while most other turns are
# Direct. With seed 42 (virtual clock), at the time of writing: TTFT p50
# ~0.2 s (Direct turns) and 3-14 s for the reseeds of 40K tokens or more:
# an isolated one costs 4-7 s (above), queueing behind Fallbacks on p0 and
# on the shared link adds the rest. More sessions (-var sessions=8) turn it
# into capacity thrashing.
# ---------------------------------------------------------------------------

workload {
  clock = "virtual"
  seed  = var.seed
  loop  = "closed"

  generator "agentic" {
    sessions      = var.sessions
    turns         = 32
    system_tokens = 8000 # system prompt + tool schemas
    first_tokens  = 4000 # task statement
    append_tokens = 1000 # mean tokens appended per turn (tool results)
    output_tokens = 300  # mean output tokens per turn
    think_time    = "2.5s"
  }
}

# 1p3d-mlx5.hcl -- the default pdemu scenario.
#
# One prefill worker and three decode workers on H200 SXM GPUs serving
# Qwen3-Coder-30B-A3B, routed by KVC-Router. The prefill worker moves KV to
# each decode worker over its own 200 Gb/s RDMA NIC (ConnectX, mlx5_0..2).
# The workload is the built-in synthetic agentic generator.
#
# The cluster is base/pd.hcl; this file overrides it (extends) and adds the
# router and the workload. The other 1p3d baselines extend this file and
# change a few lines (`pdemu scenarios show NAME` prints one). Override the
# variables on the command line with -var NAME=VALUE (e.g. -var sessions=52)
# and any attribute with --set PATH=VALUE (e.g. --set router.rho=0.9).
#
# Every attribute marked "(default)" may be deleted without changing the
# result. Numbers accept expressions and the functions min, max, floor,
# ceil, range, setproduct and format.

extends = "base/pd.hcl"
name    = "1p3d-mlx5"

# Referenced as var.NAME.
variable "sessions" {
  description = "Number of concurrent agentic sessions."
  default     = 16
}

variable "seed" {
  description = "Workload RNG seed; identical inputs and seed give identical virtual runs."
  default     = 42
}

# Merged into the content of base/pd.hcl's decode workers. kv_budget_tokens
# is K_d, the KV pool in tokens (omitted or 0: derived SGLang-style from GPU
# memory, weights and mem_fraction_static); KVC-Router admits a request only
# while the pool stays under rho * K_d. A prefill worker's pool is its
# prefix cache. Other worker attributes, with their defaults: tp = 1,
# mem_fraction_static = 0.88, max_batch_tokens = 16384 (tokens per
# iteration; chunked-prefill size on D), max_running = 256 (decode only);
# cost-model overrides mfu, mbu, comm_efficiency, step_overhead,
# prefill_overhead, allreduce_latency, reserved_memory (docs/MODEL.md).
dynamic "decode" {
  content {
    kv_budget_tokens = 92104 # the KVC paper's K_d, sized for the generator below; Claude Code sessions: claude-code*.hcl
  }
}

# Links (base/pd.hcl) take transport (rdma | tcp), device (links naming one
# device on one prefill worker share its bandwidth), bandwidth with a unit
# ("200Gbps", "25GB/s", "1.5GiB/s"; b = bits, B = bytes), latency ("10us",
# the default), and optionally max_rate, efficiency, setup and fault blocks
# (see reseed-tcp-loopback.hcl).

# Router. The label is the policy: kvc, vanilla, sticky_only, kv_score (P/D)
# or a single-pool fused policy. Every value below is the KVC-Router default
# except net_capacity.
router "kvc" {
  alpha          = 1     # sticky bonus added to the prefix overlap of the session's current D
  tau_reject     = 3     # rejections of a session by a D before that D is blacklisted for it
  tau_append     = 8192  # largest append (tokens) served Direct on the resident D
  rho            = 0.95  # admit only while used + input <= rho * K_d
  epsilon        = 2     # Route->Admit tries before falling back to vanilla P/D
  block_tokens   = 24    # prefix-hash block size (a trace's own block size wins)
  v1             = false # true = omit reset-on-success (reproduces v1 session thrashing)
  reserve_output = true  # admission also reserves the output tokens
  # Capacity check of Algorithm 2. false (the literal rule, default):
  # used + input_len <= rho * K_d, which counts a resident session's prefix
  # twice (it is in used and in input_len). true: count it once.
  net_capacity = true
}

# Workload: a trace (trace = "path", relative to this file; see
# claude-code.hcl) or the agentic generator below.
workload {
  clock           = "virtual" # virtual (as fast as possible, deterministic) | wall
  time_scale      = 1         # wall clock only: emulated d takes d/time_scale (default 1)
  seed            = var.seed
  loop            = "closed" # closed: a session's next turn waits for the previous answer | open
  max_requests    = 0        # 0 = all
  sample_interval = "1s"     # instances.csv sampling interval (default)

  generator "agentic" {
    sessions        = var.sessions
    turns           = 24     # turns per session
    system_tokens   = 4000   # shared system + tools prefix
    first_tokens    = 2000   # first user message after the prefix
    append_tokens   = 600    # mean tokens appended per turn (tool results, user text)
    output_tokens   = 150    # mean output tokens per turn
    think_time      = "2.5s" # mean think/tool time between turns
    session_stagger = "1s"   # mean gap between session starts
    block_tokens    = 24     # block size of the generated prefix hashes
  }
}

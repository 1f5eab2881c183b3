# 1p3d-mlx5.hcl -- the default pdemu scenario.
#
# One prefill worker and three decode workers on H200 SXM GPUs serving
# Qwen3-Coder-30B-A3B, routed by KVC-Router. The prefill worker moves KV to
# each decode worker over its own 200 Gb/s RDMA NIC (ConnectX, mlx5_0..2).
# The workload is the built-in synthetic agentic generator.
#
# Copy this file and edit it; override the variables below on the command
# line with -var NAME=VALUE (e.g. -var sessions=52).
#
# Every attribute below that is marked "(default)" may be deleted without
# changing the result. Numbers accept expressions and the functions min,
# max, floor and ceil, e.g. max_running = min(256, var.sessions * 4).

name = "1p3d-mlx5"

# Variables can be overridden from the command line with -var NAME=VALUE
# and are referenced as var.NAME.
variable "sessions" {
  description = "Number of concurrent agentic sessions."
  default     = 16
}

variable "seed" {
  description = "Workload RNG seed; identical inputs and seed give identical virtual runs."
  default     = 42
}

# ---------------------------------------------------------------------------
# Workers. Names are unique across prefill, decode and fused blocks.
# gpu and model are names of pdemu's GPU and model presets; both required.
# ---------------------------------------------------------------------------

prefill "p0" {
  gpu   = "H200-SXM"
  model = "qwen3-coder-30b-a3b"
  tp    = 1 # tensor-parallel degree (default 1)

  # Prefix-cache capacity in tokens. Omitted (or 0): derived SGLang-style
  # from GPU memory, model weights and mem_fraction_static.
  # kv_budget_tokens = 400000
  mem_fraction_static = 0.88  # (default)
  max_batch_tokens    = 16384 # tokens prefilled per iteration (default)
}

# Decode workers hold the sessions' KV. kv_budget_tokens is K_d, the KV
# pool size in tokens; KVC-Router admits a request only while the pool stays
# under rho * K_d.
decode "d0" {
  gpu              = "H200-SXM"
  model            = "qwen3-coder-30b-a3b"
  kv_budget_tokens = 92104
  max_running      = 256   # concurrently decoding requests (default)
  max_batch_tokens = 16384 # chunked-prefill size for Direct append-prefill (default)
}

decode "d1" {
  gpu              = "H200-SXM"
  model            = "qwen3-coder-30b-a3b"
  kv_budget_tokens = 92104
  max_running      = 256
}

decode "d2" {
  gpu              = "H200-SXM"
  model            = "qwen3-coder-30b-a3b"
  kv_budget_tokens = 92104
  max_running      = 256
}

# ---------------------------------------------------------------------------
# KV links: link "PREFILL" "DECODE". kvc and vanilla need one from every
# prefill worker to every decode worker. Links that name the same device on
# the same prefill worker share that NIC's bandwidth; here each link has a
# NIC of its own.
# bandwidth takes "200Gbps", "200 Gb/s", "25GB/s", "1.5GiB/s", "100Mbps" or
# bytes/s (lower-case b = bits, upper-case B = bytes).
# latency is Go duration syntax ("10us", "1.5ms").
# ---------------------------------------------------------------------------

link "p0" "d0" {
  transport = "rdma" # rdma | tcp
  device    = "mlx5_0"
  bandwidth = "200Gbps" # ConnectX-6 port: 25 GB/s
  latency   = "10us"    # (default)
}

link "p0" "d1" {
  transport = "rdma"
  device    = "mlx5_1"
  bandwidth = "200Gbps"
  latency   = "10us"
}

link "p0" "d2" {
  transport = "rdma"
  device    = "mlx5_2"
  bandwidth = "200Gbps"
  latency   = "10us"
}

# ---------------------------------------------------------------------------
# Router. The label is the policy: "kvc" (KVC-Router) or "vanilla"
# (round-robin P/D). Every value below is the KVC-Router default.
# ---------------------------------------------------------------------------

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
  net_capacity   = true
}

# ---------------------------------------------------------------------------
# Workload. Either a trace (trace = "path", relative to this file) or the
# agentic generator below.
# ---------------------------------------------------------------------------

workload {
  clock           = "virtual" # virtual (as fast as possible, deterministic) | wall
  time_scale      = 1         # wall clock only: emulated d takes d/time_scale (default 1)
  seed            = var.seed
  loop            = "closed" # closed: a session's next turn waits for the previous answer | open
  max_requests    = 0        # 0 = all
  sample_interval = "1s"     # instances.csv sampling interval (default)

  # trace  = "../traces/mooncake/synthetic_trace.jsonl"
  # format = "mooncake"

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

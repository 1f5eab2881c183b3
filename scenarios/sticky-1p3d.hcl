# sticky-1p3d.hcl -- the default 1P3D cluster under the sticky-only
# baseline: a session stays on the decode worker it first went to (round
# robin for new sessions), with no overlap scoring, no admission and no
# migration. It isolates how much of KVC-Router's gain is plain
# stickiness (and shows the hot spots admission exists to prevent).

name = "sticky-1p3d"

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

router "sticky_only" {}

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

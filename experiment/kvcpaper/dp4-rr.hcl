# dp4-rr.hcl -- 4-way DP, round-robin
#
# Part of `pdemu experiment kvc-paper` (package experiment): the KVC-Router
# paper's evaluation setting (spec 000_*, section 7). Qwen3-Coder-30B-A3B on
# 80 GB H100 SXM GPUs, K_d = 92,104 tokens per worker (SGLang at
# mem_fraction_static 0.835). `pdemu run` on this file replays the paper's
# workload below; the experiment runs the same (and, for section 9 Q2, a
# time-compressed variant of it).

name = "kvc-paper-dp4-rr"

variable "seed" {
  default = 1
}

# Four fused workers (prefill + decode on one H100), no KV transfer.

fused "w0" {
  gpu              = "H100-SXM"
  model            = "qwen3-coder-30b-a3b"
  kv_budget_tokens = 92104 # SGLang's one pool per worker
}

fused "w1" {
  gpu              = "H100-SXM"
  model            = "qwen3-coder-30b-a3b"
  kv_budget_tokens = 92104 # SGLang's one pool per worker
}

fused "w2" {
  gpu              = "H100-SXM"
  model            = "qwen3-coder-30b-a3b"
  kv_budget_tokens = 92104 # SGLang's one pool per worker
}

fused "w3" {
  gpu              = "H100-SXM"
  model            = "qwen3-coder-30b-a3b"
  kv_budget_tokens = 92104 # SGLang's one pool per worker
}


router "round_robin" {}

variable "content" {
  description = "SWE-Bench content model: paper | v0 | v1-stress (docs/MODEL.md 6.2)"
  default     = "paper"
}

# The paper's load: the SWE-Bench-like trace on its real 5.44 h timeline,
# replayed closed loop by a client that keeps at most 32 requests
# outstanding (spec section 7: time-scale 1.0, concurrency 32).
workload {
  clock      = "virtual"
  seed       = var.seed
  loop       = "closed"
  client_cap = 32

  generator "swebench" {
    content = var.content
    # sessions        = 52
    # requests        = 4449
    # active_sessions = 0 # > 0: that many sessions at once (compressed timeline)
  }
}

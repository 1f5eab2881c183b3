# dp4-rr.hcl -- 4-way DP, round-robin
#
# Part of `pdemu experiment kvc-paper` (package experiment): the KVC-Router
# paper's evaluation setting (spec 000_*, section 7). Qwen3-Coder-30B-A3B on
# 80 GB H100 SXM GPUs, K_d = 92,104 tokens per worker (SGLang at
# mem_fraction_static 0.835). The experiment replaces the workload block
# below by the SWE-Bench-like generator (workload/swebench.go: 52 sessions,
# 4,449 requests on the 5.44 h timeline) behind a client cap of 32
# outstanding requests; run on its own, this file replays the small
# agentic generator.

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

workload {
  clock = "virtual"
  seed  = var.seed
  loop  = "closed"

  generator "agentic" {
    sessions = 4
    turns    = 8
  }
}

# dp4.hcl -- the "4-way DP" comparison of the KVC paper: four fused
# (prefill + decode on one GPU) workers behind an SGLang-style cache-aware
# router, no P/D separation, no KV transfer. Each worker keeps a prefix
# cache of everything it served, so a session routed back to the same
# worker prefills only its new tokens.
#
# router "cache_aware_dp": follow the worker with the longest recorded
# prefix when it covers at least cache_threshold of the prompt, else the
# least loaded worker; when max - min load > balance_abs_threshold and
# max > balance_rel_threshold * min, always the least loaded.
# Any local router policy works here too (router "cache_affinity" {}, ...).

name = "dp4"

variable "sessions" {
  description = "Number of concurrent agentic sessions."
  default     = 16
}

variable "seed" {
  default = 42
}

# Four fused workers w0..w3 with the paper's per-GPU pool.
dynamic "fused" {
  for_each = range(4)
  labels   = ["w${fused.value}"]
  content {
    gpu              = "H200-SXM"
    model            = "qwen3-coder-30b-a3b"
    kv_budget_tokens = 92104 # the paper's pool, sized for the generator; Claude Code sessions: claude-code-dp4.hcl
  }
}

router "cache_aware_dp" {
  cache_threshold       = 0.5
  balance_abs_threshold = 32
  balance_rel_threshold = 1.0001
}

workload {
  clock = "virtual"
  seed  = var.seed
  loop  = "closed"

  generator "agentic" {
    sessions = var.sessions
    turns    = 24
  }
}

# claude-code.hcl -- replay the real Claude Code agent sessions
# (../shared/traces/weka-claude-code: 40 sessions plus their subagents,
# ~2,800 requests, mean prompt ~128K tokens, 64-token prefix blocks) on a
# 1P3D cluster routed by KVC-Router.
#
# The trace path is relative to this file's directory (scenarios/); run
# from the repository root with ../shared/traces beside it, or pass
# --trace DIR. Sessions are replayed closed loop: a session's next request
# is released its recorded think time after the previous answer.
#
# Sized for this workload: the prompts are far larger than the KVC paper's
# K_d = 92,104, so the decode pools are derived from memory (H200, ~718K
# tokens each; `pdemu models`), and the sessions reach 496K tokens (p90
# 254K), past Qwen3-Coder's native 262,144: the workers serve the 1M-token
# YaRN context of the model card (max_model_len). Cluster: base/pd.hcl.

extends = "base/pd.hcl"
name    = "claude-code"

variable "max_concurrent" {
  description = "At most this many sessions overlap (staggered starts)."
  default     = 16
}

# The model card: "262,144 natively, extendable up to 1M tokens using Yarn".
dynamic "prefill" {
  content {
    max_model_len = 1048576
  }
}

dynamic "decode" {
  content {
    max_model_len = 1048576
  }
}

# epsilon is left out on purpose: a kvc block without it gets the spec's
# general default |D| (= 3 here; docs/MODEL.md §7.4). The paper's 2 is a
# 1P3D evaluation figure, stated in the 1P3D scenarios.
router "kvc" {
  net_capacity = true # count a resident session's KV once (see 1p3d-mlx5.hcl)
}

workload {
  trace          = "../../shared/traces/weka-claude-code"
  format         = "claude-code"
  loop           = "closed"
  max_concurrent = var.max_concurrent # staggered session starts
  share_prefix   = true               # sessions share the tools+system prompt blocks
  seed           = 1
}

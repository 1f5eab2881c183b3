# claude-code-dp4.hcl -- dp4.hcl (four fused workers, cache-aware DP)
# sized for the Claude Code sessions as claude-code.hcl is: K_d derived
# from H200 memory and the 1M-token YaRN context; the same replay.

extends = "dp4.hcl"
name    = "claude-code-dp4"

dynamic "fused" {
  content {
    kv_budget_tokens = 0 # derived from GPU memory
    max_model_len    = 1048576
  }
}

workload {
  trace          = "../../shared/traces/weka-claude-code"
  format         = "claude-code"
  max_concurrent = 16
  share_prefix   = true
  seed           = 1
}

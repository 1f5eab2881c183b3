# mooncake.hcl -- replay the Mooncake FAST'25 synthetic trace
# (../shared/traces/mooncake/synthetic_trace.jsonl: 3,993 requests over
# 17 minutes, mean prompt 15.3K tokens, 512-token prefix blocks) open loop,
# at its own timestamps, on a 4P4D cluster routed by KVC-Router.
#
# The trace has no session ids; infer_sessions groups a request whose
# prompt extends an earlier request's prompt into that request's session
# (1,455 of the 3,993 do), so KVC-Router can serve them Direct.
# The trace path is relative to this file's directory (scenarios/).

extends = "base/pd.hcl"
name    = "mooncake"

variable "prefills" {
  default = 4
}

variable "decodes" {
  default = 4
}

# Each prefill worker has one 400 Gb/s NIC, shared by its four links.
mesh {
  device    = "mlx5_0"
  bandwidth = "400Gbps"
}

# epsilon is left out on purpose: a kvc block without it gets the spec's
# general default |D| (= 4 here; docs/MODEL.md §7.4). The paper's 2 is a
# 1P3D evaluation figure, stated in the 1P3D scenarios.
router "kvc" {
  net_capacity = true
}

workload {
  trace          = "../../shared/traces/mooncake/synthetic_trace.jsonl"
  format         = "mooncake"
  loop           = "open"
  infer_sessions = true
  seed           = 1
}

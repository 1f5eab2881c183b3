# mooncake.hcl -- replay the Mooncake FAST'25 synthetic trace
# (../shared/traces/mooncake/synthetic_trace.jsonl: 3,993 requests over
# 17 minutes, mean prompt 15.3K tokens, 512-token prefix blocks) open loop,
# at its own timestamps, on a 4P4D cluster routed by KVC-Router.
#
# The trace has no session ids; infer_sessions groups a request whose
# prompt extends an earlier request's prompt into that request's session
# (1,455 of the 3,993 do), so KVC-Router can serve them Direct.
# The trace path is relative to this file's directory (scenarios/).

name = "mooncake"

prefill "p0" {
  gpu   = "H200-SXM"
  model = "qwen3-coder-30b-a3b"
}

prefill "p1" {
  gpu   = "H200-SXM"
  model = "qwen3-coder-30b-a3b"
}

prefill "p2" {
  gpu   = "H200-SXM"
  model = "qwen3-coder-30b-a3b"
}

prefill "p3" {
  gpu   = "H200-SXM"
  model = "qwen3-coder-30b-a3b"
}

decode "d0" {
  gpu   = "H200-SXM"
  model = "qwen3-coder-30b-a3b"
}

decode "d1" {
  gpu   = "H200-SXM"
  model = "qwen3-coder-30b-a3b"
}

decode "d2" {
  gpu   = "H200-SXM"
  model = "qwen3-coder-30b-a3b"
}

decode "d3" {
  gpu   = "H200-SXM"
  model = "qwen3-coder-30b-a3b"
}

# Each prefill node has one 400 Gb/s NIC shared by its four links.
link "p0" "d0" {
  transport = "rdma"
  device    = "mlx5_0"
  bandwidth = "400Gbps"
}
link "p0" "d1" {
  transport = "rdma"
  device    = "mlx5_0"
  bandwidth = "400Gbps"
}
link "p0" "d2" {
  transport = "rdma"
  device    = "mlx5_0"
  bandwidth = "400Gbps"
}
link "p0" "d3" {
  transport = "rdma"
  device    = "mlx5_0"
  bandwidth = "400Gbps"
}
link "p1" "d0" {
  transport = "rdma"
  device    = "mlx5_0"
  bandwidth = "400Gbps"
}
link "p1" "d1" {
  transport = "rdma"
  device    = "mlx5_0"
  bandwidth = "400Gbps"
}
link "p1" "d2" {
  transport = "rdma"
  device    = "mlx5_0"
  bandwidth = "400Gbps"
}
link "p1" "d3" {
  transport = "rdma"
  device    = "mlx5_0"
  bandwidth = "400Gbps"
}
link "p2" "d0" {
  transport = "rdma"
  device    = "mlx5_0"
  bandwidth = "400Gbps"
}
link "p2" "d1" {
  transport = "rdma"
  device    = "mlx5_0"
  bandwidth = "400Gbps"
}
link "p2" "d2" {
  transport = "rdma"
  device    = "mlx5_0"
  bandwidth = "400Gbps"
}
link "p2" "d3" {
  transport = "rdma"
  device    = "mlx5_0"
  bandwidth = "400Gbps"
}
link "p3" "d0" {
  transport = "rdma"
  device    = "mlx5_0"
  bandwidth = "400Gbps"
}
link "p3" "d1" {
  transport = "rdma"
  device    = "mlx5_0"
  bandwidth = "400Gbps"
}
link "p3" "d2" {
  transport = "rdma"
  device    = "mlx5_0"
  bandwidth = "400Gbps"
}
link "p3" "d3" {
  transport = "rdma"
  device    = "mlx5_0"
  bandwidth = "400Gbps"
}

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

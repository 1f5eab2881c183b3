# 1p3d-tcp.hcl -- 1p3d-mlx5.hcl with KV moved over TCP instead of RDMA.
#
# The KVC-Router paper ran its 1P3D setup with Mooncake's TCP transport on a
# single node: the reseed tail (TCP transfer 1.5-4 s) dominated TTFT p99.
# Here the three links are TCP over one loopback-like device "lo" at
# ~25 Gb/s (single-stream kernel TCP) with 50 us latency; since they name
# the same device on the same prefill worker they SHARE that bandwidth.

extends = "1p3d-mlx5.hcl"
name    = "1p3d-tcp"

mesh {
  transport = "tcp"
  device    = "lo"
  bandwidth = "25Gbps"
  latency   = "50us"
}

# vanilla-pd-1p3d.hcl -- the naive P/D baseline for 1p3d-mlx5.hcl.
#
# The cluster and workload of 1p3d-mlx5.hcl (extended: 1 prefill + 3 decode
# H200 SXM workers, Qwen3-Coder-30B-A3B, one 200 Gb/s RDMA NIC per link), but
# routed by vanilla P/D: every request is prefilled on a round-robin prefill
# worker, its KV moved over the link, and decoded on a round-robin decode
# worker. No session affinity and no Direct path, so every turn re-prefills
# the whole context. Compare its TTFT with 1p3d-mlx5.hcl.

extends = "1p3d-mlx5.hcl"
name    = "vanilla-pd-1p3d"

router "vanilla" {
  block_tokens = 24
}

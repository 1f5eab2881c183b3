# vanilla-rdma.hcl -- vanilla 1P3D (the naive control of section 9 Q1) over RDMA
#
# Part of `pdemu experiment kvc-paper` (package experiment): the KVC-Router
# paper's evaluation setting (spec 000_*, section 7). Qwen3-Coder-30B-A3B on
# 80 GB H100 SXM GPUs, K_d = 92,104 tokens per worker (SGLang at
# mem_fraction_static 0.835). The experiment replaces the workload block
# below by the SWE-Bench-like generator (workload/swebench.go: 52 sessions,
# 4,449 requests on the 5.44 h timeline) behind a client cap of 32
# outstanding requests; run on its own, this file replays the small
# agentic generator.

name = "kvc-paper-vanilla-rdma"

variable "seed" {
  default = 1
}

# One prefill and three decode workers, one H100 each.
prefill "p0" {
  gpu   = "H100-SXM"
  model = "qwen3-coder-30b-a3b"
  # SGLang-style prefix cache, sized like the paper's workers: 0.835 of
  # memory, 1.44 GiB never seen by SGLang (gives 92,107 tokens; see
  # scenarios/reseed-tcp-loopback.hcl). The default MFU (0.35) is kept: the
  # re-prefill time is not fitted to the paper.
  mem_fraction_static = 0.835
  reserved_memory     = "1.44GiB"
}

decode "d0" {
  gpu              = "H100-SXM"
  model            = "qwen3-coder-30b-a3b"
  kv_budget_tokens = 92104
}

decode "d1" {
  gpu              = "H100-SXM"
  model            = "qwen3-coder-30b-a3b"
  kv_budget_tokens = 92104
}

decode "d2" {
  gpu              = "H100-SXM"
  model            = "qwen3-coder-30b-a3b"
  kv_budget_tokens = 92104
}


# mlx5 RDMA, 200 Gb/s, one NIC per decode worker (spec section 9, Q3).
link "p0" "d0" {
  transport = "rdma"
  device    = "mlx5_0"
  bandwidth = "200Gbps"
  latency   = "10us"
}

# mlx5 RDMA, 200 Gb/s, one NIC per decode worker (spec section 9, Q3).
link "p0" "d1" {
  transport = "rdma"
  device    = "mlx5_1"
  bandwidth = "200Gbps"
  latency   = "10us"
}

# mlx5 RDMA, 200 Gb/s, one NIC per decode worker (spec section 9, Q3).
link "p0" "d2" {
  transport = "rdma"
  device    = "mlx5_2"
  bandwidth = "200Gbps"
  latency   = "10us"
}


router "vanilla" {}

workload {
  clock = "virtual"
  seed  = var.seed
  loop  = "closed"

  generator "agentic" {
    sessions = 4
    turns    = 8
  }
}

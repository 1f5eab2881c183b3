# base/pd.hcl -- the disaggregated cluster the shipped P/D scenarios extend
# (extends = "base/pd.hcl"); not a scenario on its own (no router, no
# workload). var.prefills prefill and var.decodes decode workers of
# Qwen3-Coder-30B-A3B on one H200 each, and a 200 Gb/s RDMA link from every
# prefill worker to every decode worker, over the prefill worker's NIC
# "mlx5_<decode index>" (so each link has a NIC of its own).
#
# The workers are `dynamic` blocks (one block per element of for_each;
# labels and content may use the iterator, named after the block type:
# decode.value) and the links one mesh block. A scenario that extends this
# file changes them by overriding a dynamic block's content or the mesh's
# attributes, e.g.
#
#   mesh {
#     transport = "tcp"
#     device    = "lo" # one NIC shared by every link of each prefill worker
#   }
#
# and the counts with variable "decodes" { default = 4 } or -var decodes=4.
# Names are unique across prefill, decode and fused blocks; gpu and model
# name pdemu's presets (`pdemu gpus`, `pdemu models`). See 1p3d-mlx5.hcl
# for every attribute a worker and a link take.

variable "prefills" {
  description = "Number of prefill workers (p0, p1, ...)."
  default     = 1
}

variable "decodes" {
  description = "Number of decode workers (d0, d1, ...)."
  default     = 3
}

dynamic "prefill" {
  for_each = range(var.prefills)
  labels   = ["p${prefill.value}"]
  content {
    gpu   = "H200-SXM"
    model = "qwen3-coder-30b-a3b"
  }
}

dynamic "decode" {
  for_each = range(var.decodes)
  labels   = ["d${decode.value}"]
  content {
    gpu   = "H200-SXM"
    model = "qwen3-coder-30b-a3b"
  }
}

# Every prefill worker to every decode worker: a mesh block links each pair
# without a link block of its own (topology/mesh.go); device is evaluated per
# pair with link.prefill, link.decode, link.prefill_index and
# link.decode_index in scope. It builds 256P768D's 196,608 links in about a
# second, where a dynamic "link" over setproduct was capped at 65,536 pairs.
mesh {
  transport = "rdma"
  device    = "mlx5_${link.decode_index}"
  bandwidth = "200Gbps"
}

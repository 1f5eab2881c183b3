# vanilla-rdma.hcl -- vanilla 1P3D (the naive control of section 9 Q1) over RDMA
#
# vanilla-tcp.hcl with base/paper.hcl's RDMA links. Part of `pdemu
# experiment kvc-paper`.

extends = "vanilla-tcp.hcl"
name    = "kvc-paper-vanilla-rdma"

variable "transport" {
  default = "rdma"
}

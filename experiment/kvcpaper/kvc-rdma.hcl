# kvc-rdma.hcl -- KVC-Router 1P3D over mlx5 RDMA (section 9 Q3)
#
# kvc-tcp.hcl with base/paper.hcl's RDMA links: 200 Gb/s, one NIC per
# decode worker. Part of `pdemu experiment kvc-paper`.

extends = "kvc-tcp.hcl"
name    = "kvc-paper-kvc-rdma"

variable "transport" {
  default = "rdma"
}

# vanilla-tcp.hcl -- vanilla 1P3D (the naive control of section 9 Q1) over TCP loopback
#
# Part of `pdemu experiment kvc-paper`: base/paper.hcl's cluster, links
# and load under the vanilla router (every request prefilled on P, its KV
# moved to a decode worker). vanilla-rdma.hcl extends it.

extends = "base/paper.hcl"
name    = "kvc-paper-vanilla-tcp"

router "vanilla" {}

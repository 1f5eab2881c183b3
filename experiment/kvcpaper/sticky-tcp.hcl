# sticky-tcp.hcl -- sticky-only 1P3D (section 9 Q1: pinning alone) over TCP loopback
#
# Part of `pdemu experiment kvc-paper`: base/paper.hcl's cluster, links
# and load under the sticky-only router.

extends = "base/paper.hcl"
name    = "kvc-paper-sticky-tcp"

router "sticky_only" {}

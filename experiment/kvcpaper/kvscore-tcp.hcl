# kvscore-tcp.hcl -- kv-score 1P3D (section 9 Q1: scoring without admission) over TCP loopback
#
# Part of `pdemu experiment kvc-paper`: base/paper.hcl's cluster, links
# and load under Algorithm 1's scoring alone.

extends = "base/paper.hcl"
name    = "kvc-paper-kvscore-tcp"

router "kv_score" {
  alpha = 1
}

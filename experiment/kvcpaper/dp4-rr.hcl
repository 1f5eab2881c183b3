# dp4-rr.hcl -- 4-way DP, round-robin
#
# Part of `pdemu experiment kvc-paper`: base/dp4.hcl's four fused H100
# workers and base/paper.hcl's load, requests dealt in turn.

extends = "base/dp4.hcl"
name    = "kvc-paper-dp4-rr"

router "round_robin" {}

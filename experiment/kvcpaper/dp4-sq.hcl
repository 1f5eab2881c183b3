# dp4-sq.hcl -- 4-way DP, shortest queue (least loaded)
#
# Part of `pdemu experiment kvc-paper`: base/dp4.hcl's four fused H100
# workers and base/paper.hcl's load, each request to the worker with the
# fewest queued + running requests.

extends = "base/dp4.hcl"
name    = "kvc-paper-dp4-sq"

router "least_loaded" {}

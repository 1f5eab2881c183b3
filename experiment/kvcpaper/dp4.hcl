# dp4.hcl -- 4-way DP, SGLang cache-aware router
#
# Part of `pdemu experiment kvc-paper`: base/dp4.hcl's four fused H100
# workers and base/paper.hcl's load under SGLang's router.

extends = "base/dp4.hcl"
name    = "kvc-paper-dp4"

variable "cache_threshold" {
  default = 0.3
}
variable "balance_abs" {
  default = 64
}
variable "balance_rel" {
  default = 1.5
}
variable "miss_rule" {
  default = "smallest_tree"
}

# SGLang's cache-aware router: current defaults 0.3 / 64 / 1.5 (older
# releases 0.5 / 32 / 1.0001), a miss to the worker with the smallest tree.
router "cache_aware_dp" {
  cache_threshold       = var.cache_threshold
  balance_abs_threshold = var.balance_abs
  balance_rel_threshold = var.balance_rel
  miss_rule             = var.miss_rule
}

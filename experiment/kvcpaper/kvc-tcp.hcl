# kvc-tcp.hcl -- KVC-Router 1P3D over TCP loopback (the paper's transport)
#
# Part of `pdemu experiment kvc-paper` (package experiment): the paper's
# H100 cluster, links and SWE-Bench load are base/paper.hcl's; this file
# adds the router. kvc-rdma.hcl extends it.

extends = "base/paper.hcl"
name    = "kvc-paper-kvc-tcp"

variable "v1" {
  description = "true = KVC v1 (no reset-on-success)"
  default     = false
}

variable "tau_append" {
  description = "tau_append: 8192 (v2), 2048 (v0/v1)"
  default     = 8192
}

variable "prefill_cache_backup" {
  description = "true = P's prefix cache serves reseeds (pdemu before issue 10)"
  default     = false
}

variable "dp_sync" {
  description = "true = D->P incremental KV sync (section 9 Q4; not in the paper)"
  default     = false
}

# Section 7 parameters. epsilon = 2 is the 1P3D evaluation's value (the
# general default is |D|). net_capacity = true counts a resident session's
# prefix once in Algorithm 2's capacity check, as every shipped KVC
# scenario but reseed-tcp-loopback does.
router "kvc" {
  alpha                = 1
  tau_reject           = 3
  tau_append           = var.tau_append
  rho                  = 0.95
  epsilon              = 2
  v1                   = var.v1
  net_capacity         = true
  prefill_cache_backup = var.prefill_cache_backup
  dp_sync              = var.dp_sync
}

# base/dp4.hcl -- the paper's 4-way data-parallel baseline: base/paper.hcl
# with four fused workers w0..w3 (prefill + decode on one H100, one KV and
# prefix-cache pool of K_d each, no KV transfer) instead of 1P3D. No
# router: not a run on its own; dp4.hcl, dp4-rr.hcl and dp4-sq.hcl extend
# it and add one.

extends = "paper.hcl"

variable "prefills" {
  default = 0
}

variable "decodes" {
  default = 0
}

variable "fused" {
  default = 4
}

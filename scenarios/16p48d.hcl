# 16p48d.hcl -- the default scenario (1p3d-mlx5.hcl) scaled to 16 prefill and
# 48 decode workers at constant load per worker: 16× the sessions and 1/16
# of the mean gap between session starts, and ε = |D| as in 4p12d.hcl.

extends = "4p12d.hcl"
name    = "16p48d"

variable "prefills" {
  default = 16
}

variable "decodes" {
  default = 48
}

variable "sessions" {
  default = 256
}

workload {
  generator "agentic" {
    session_stagger = "62.5ms"
  }
}

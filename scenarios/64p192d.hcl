# 64p192d.hcl -- the default scenario (1p3d-mlx5.hcl) scaled to 64 prefill and
# 192 decode workers at constant load per worker: 64× the sessions and 1/64
# of the mean gap between session starts, and ε = |D| as in 4p12d.hcl.

extends = "4p12d.hcl"
name    = "64p192d"

variable "prefills" {
  default = 64
}

variable "decodes" {
  default = 192
}

variable "sessions" {
  default = 1024
}

workload {
  generator "agentic" {
    session_stagger = "15.625ms"
  }
}

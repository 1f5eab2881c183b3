# 4p12d.hcl -- the default scenario (1p3d-mlx5.hcl) scaled to 4 prefill and
# 12 decode workers at constant load per worker: 4× the sessions and 1/4
# of the mean gap between session starts.
#
# 4p12d, 16p48d and 64p192d measure how KVC-Router's Fallback share grows
# with the cluster (docs/MODEL.md §9). They take the spec's general
# ε = |D| (epsilon = var.decodes; 1p3d-mlx5.hcl keeps the paper's 1P3D
# ε = 2): with ε = 2 a new session tries only the two D's that hold the
# shared system prefix, the other D's join only through reseeds, and the
# Fallback share grows with |D| (--set router.epsilon=2 shows it). The
# opt-in remedies own_overlap and load_floor (router block) spread the
# sessions at any ε.

extends = "1p3d-mlx5.hcl"
name    = "4p12d"

variable "prefills" {
  default = 4
}

variable "decodes" {
  default = 12
}

variable "sessions" {
  default = 64
}

router "kvc" {
  epsilon = var.decodes
}

workload {
  generator "agentic" {
    session_stagger = "250ms"
  }
}

# 64p192d.hcl -- the default scenario (1p3d-mlx5.hcl) scaled to 64 prefill and
# 192 decode workers at constant load per worker: 64× the sessions and 1/64
# of the mean gap between session starts, and ε = |D| as in 4p12d.hcl.
#
# routing_log = false: with ε = 192 its 24,576 requests make about 1.1
# million admission tries, and routing_log.jsonl would be about 0.9 GB even
# at 8 candidates a try (a 46 s run instead of 16 s; the other outputs are
# the same either way). --set router.routing_log=true turns it back on,
# router.log_candidates=N changes how many candidates a try lists.

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

router "kvc" {
  routing_log = false
}

workload {
  generator "agentic" {
    session_stagger = "15.625ms"
  }
}

# chaos.hcl -- the default 1P3D cluster under faults: decode workers and
# links that crash and come back, drawn at random from a seed, and one
# decode worker that dies mid-run for a while.
#
# Everything is 1p3d-mlx5.hcl (extended: KVC-Router, 1 prefill + 3 decode
# H200 workers, 200 Gb/s RDMA links), with fewer sessions so the run is
# short. What a fault does (docs/MODEL.md, "Faults"): a crashed decode
# worker loses its resident KV and its requests, a cut link fails the
# transfers on it; the router learns of it after detection_delay (the
# health probe) or sooner from a lost request or a failed transfer, stops
# routing there, forgets what it believed resident there, and retries the
# requests the fault hit up to retry_budget times. faults.csv lists every
# fault with what it did and how long the run took to recover. Compare the
# policies with
#
#   pdemu compare --scenario chaos.hcl --router kvc,vanilla,sticky_only
#
# and change the schedule with -var chaos_seed=N.

extends = "1p3d-mlx5.hcl"
name    = "chaos"

variable "sessions" {
  default = 8
}

variable "chaos_seed" {
  description = "Seed of the random fault schedule."
  default     = 7
}

# d1 dies 30 s into the run and restarts with empty memory 20 s later
# (merged into base/pd.hcl's decode blocks: a crash block on d1 only).
dynamic "decode" {
  content {
    kv_budget_tokens = 92104
    dynamic "crash" {
      for_each = decode.value == 1 ? [1] : []
      content {
        at            = "30s"
        restart_after = "20s"
      }
    }
  }
}

# How the router notices faults, and how often a request a fault hit is
# dispatched again before it fails (the defaults: 1s, 2).
recovery {
  detection_delay = "1s"
  retry_budget    = 2
}

# Random crashes: each decode worker fails on average every 120 s and each
# link every 240 s of the first 90 s, each for restart_after. Other keys:
# mtbf_prefill, mtbf_fused.
chaos {
  seed          = var.chaos_seed
  horizon       = "90s"
  restart_after = "10s"
  mtbf_decode   = "120s"
  mtbf_link     = "240s"
}

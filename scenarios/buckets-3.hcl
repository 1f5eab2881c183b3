# buckets-3.hcl -- bucket-aware two-level routing over fused workers, as in
# the bucket design document: requests are split by input length into
# short / medium / long buckets, each an isolated pool of instances with
# its own prefix caches and meta-store. The global router picks a bucket,
# the local router an instance inside it.
#
# This file uses global_router "bucket_score"; buckets-3-strict.hcl extends
# it with "strict_input_length" (so does --router strict_input_length).
# Compare the two runs' per_bucket and length_bucket_match.
# Outputs add routing_log.jsonl (one line per decision, with every bucket's
# and instance's score) and a per_bucket breakdown in summary.json.

name = "buckets-3"

variable "sessions" {
  description = "Number of concurrent agentic sessions."
  default     = 24
}

variable "seed" {
  default = 42
}

# Ten fused workers: s0-s2 (short), m0-m3 (medium) and l0-l2 (long).
dynamic "fused" {
  for_each = ["s0", "s1", "s2", "m0", "m1", "m2", "m3", "l0", "l1", "l2"]
  labels   = [fused.value]
  content {
    gpu   = "H200-SXM"
    model = "qwen3-coder-30b-a3b"
  }
}

# Input-length ranges (tokens, inclusive) must tile without gaps or
# overlaps; a length outside every range fails under strict_input_length.
# remote_fetch_bandwidth is the RDMA fabric between a bucket's instances:
# an instance missing a prefix that another instance of the same bucket
# caches fetches it instead of recomputing it (never across buckets).
bucket "short" {
  remote_fetch_bandwidth = "200Gbps"
  input_tokens = [0, 16384]
  instances    = ["s0", "s1", "s2"]
}

bucket "medium" {
  remote_fetch_bandwidth = "200Gbps"
  input_tokens = [16385, 40960]
  instances    = ["m0", "m1", "m2", "m3"]
}

bucket "long" {
  remote_fetch_bandwidth = "200Gbps"
  input_tokens = [40961, 1048576]
  instances    = ["l0", "l1", "l2"]
}

# score = length_penalty_weight * length_penalty + load_weight * load
#       + cache_weight * miss; the lowest wins (see README / policy/bucket).
global_router "bucket_score" {
  length_penalty_weight = 1
  load_weight           = 1
  cache_weight          = 1
}

# Shared by every bucket (each bucket has its own instance of it).
local_router "cache_affinity" {
  meta_store_ttl = "1000s"
  prefix_k       = 8
}

workload {
  seed = var.seed # virtual clock, closed loop (the defaults)

  generator "agentic" {
    sessions      = var.sessions
    turns         = 40
    first_tokens  = 6000
    append_tokens = 1200
  }
}

# buckets-3-strict.hcl -- buckets-3.hcl with global_router
# "strict_input_length": every request goes to the bucket whose range holds
# its length (buckets-3.hcl scores the buckets with "bucket_score").

extends = "buckets-3.hcl"
name    = "buckets-3-strict"

global_router "strict_input_length" {}

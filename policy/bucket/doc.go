// Package bucket holds pdemu's two-level, bucket-aware routing: a global
// router picks an input-length bucket from read-only BucketView summaries,
// then the bucket's local router picks an instance inside it (after the
// bucket-aware routing design of kvcache-simulator, shared/seeds/004).
//
// Buckets are isolated by construction: each bucket owns one Local, and
// with it its own meta-store (which instance holds which block), counters
// and sticky sessions. Nothing here is shared between two Locals, so the
// long bucket never sees the short bucket's blocks.
//
// Contract: pure and deterministic. No goroutines, no wall clock, no
// protoactor; time is the caller's emulated `now`; randomness is seeded
// (LocalConfig.Seed). Given the same sequence of calls, a router returns the
// same decisions. Nothing is safe for concurrent use: a bucket actor owns
// its Local, the service actor owns the Global.
//
// # Calling sequence (per request)
//
//	views[b].PredictedPrefix = locals[b].PredictPrefix(r, now)   // bucket_score only needs it
//	gd := global.Route(r, views, now)                             // gd.Bucket < 0: fail with gd.Reason
//	ld := locals[gd.Bucket].Route(r, instanceViews, prober, now)  // dispatch after ld.ProbeLatency
//	locals[gd.Bucket].Routed(r, ld.Instance, now)                 // record r's blocks on the instance
//	... locals[b].Evicted(i, keys, now) on cache evictions, locals[b].Finished(i, now) at completion
//
// # Global policies (Score: lower wins, ties to the lower bucket id)
//
//	policy              | decision
//	--------------------+------------------------------------------------------------------
//	strict_input_length | the bucket whose [Min, Max] contains InputLen; none → Bucket -1,
//	                    | Reason "no bucket covers input length N" (the request fails)
//	bucket_score        | argmin over every bucket of
//	                    |   a·length_penalty + b·load + c·miss
//	                    | a, b, c = LengthPenaltyWeight, LoadWeight, CacheWeight, and
//	                    |   length_penalty = 0 inside [Min, Max]; (Min−n)/Min below it;
//	                    |                    (n−Max)/Max above it (n = InputLen; an edge
//	                    |                    of 0 counts as 1)            (LengthPenalty)
//	                    |   load  = KVUsed/KVTotal + QueueSum/Instances    (BucketLoad)
//	                    |   miss  = 1 − PredictedPrefix/len(Blocks), 1 without blocks (Miss)
//
// StrictBucket is reported under both policies, so Bucket != StrictBucket
// marks a request routed off its length (Reason "off-range"). QueueMax,
// Active and DrainTime are carried for the routing log; no policy scores
// them yet.
//
// # Local policies (Score: higher wins; ties to the lower load, then the
// lower index, unless stated)
//
// load = Queue + Running of the InstanceView; pre = the meta-store's
// predicted prefix of the request on the instance, in blocks; nb =
// len(Blocks).
//
//	policy          | Score / decision
//	----------------+---------------------------------------------------------------------
//	random          | uniform over the instances, PCG seeded with Seed (Score 0)
//	round_robin     | instances in turn, one step per Route call (Score 0)
//	least_loaded    | −load
//	least_tokens    | −(KVUsed + QueuedPrefillTokens)
//	cache_score     | ScoreAlpha·pre − ScoreBeta·load
//	ttl_aware       | pre over the unexpired entries (MetaStoreTTL): the longest live prefix
//	precise         | probe the top ProbeTopK instances by (pre desc, load, index) through the
//	                | Prober, ProbeLatency each (ProbeLatency of the decision = K·ProbeLatency);
//	                | Score = the real cached prefix, −1 for instances not probed. No Prober:
//	                | Score = pre, no latency. No blocks: −load, no probe.
//	cache_load      | pre/nb − LoadAlpha·load (pre/nb = 0 when nb = 0)
//	estimated_ttft  | −(QueuedPrefillTokens + uncached)/PrefillRate seconds, uncached =
//	                | InputLen − min(pre·BlockTokens, InputLen−1); PrefillRate <= 0 scores
//	                | −MaxFloat64 (when no instance has a rate: −load)
//	prefix_affinity | rendezvous (HRW) weight of the instance for the hash of the first
//	                | PrefixK blocks (the session when there are none), in [0, 1); the
//	                | highest is home. FanOut > 1: the least loaded of the FanOut highest
//	                | weights (ties to the higher weight)
//	cache_affinity  | pick = prefix_affinity's choice; if some instance has a strictly longer
//	                | pre, pick = the longest (ties: load, index); if pick is overloaded
//	                | (load > OverloadFactor × max(mean load of the bucket, 1)), pick =
//	                | the longest pre among the instances that are not. Score = pre
//	kvc             | KVC Algorithm 1 without admission: lexicographic max of
//	                | (pre + α·sticky, sticky, −inflight, −assigned), then lower index;
//	                | α = KVC.Alpha, sticky = 1 on the session's last Routed instance,
//	                | inflight = Routed − Finished, assigned = Routed, per instance.
//	                | Score = pre + α·sticky
//
// Reasons: "random", "round-robin", "best", "home", "fan-out",
// "longer-prefix", "overloaded", "probed", "no-prober", "no-blocks",
// "sticky", "no-prefill-rate" (the Reason* constants).
//
// # Meta-store
//
// Each Local keeps a map block hash → short owner list (instance, last
// seen), fed by Routed (every block of the request, seen = now) and
// Evicted. Entries expire lazily MetaStoreTTL after their last record (0:
// never): lookups ignore them, writes unlink them, and an amortised sweep
// frees them. Prefix predictions rely on the blocks being prefix-chained
// and on each instance's live entries being prefix closed (every
// predecessor of a held block is held, which Routed, expiry and tail-first
// eviction such as gpu.BlockLRU's preserve): "instance holds block i" is
// then monotone in i, and a galloping binary search finds every
// instance's longest prefix in O(log nb) map lookups per distinct answer
// instead of walking the request. overlap (kvc) equals the prefix under
// the same assumption. prefix_affinity's key does not rely on it.
package bucket

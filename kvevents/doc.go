// Package kvevents publishes a worker's KV-cache events the way vLLM does
// (vllm/distributed/kv_events.py), so a KV-aware router built for vLLM
// (llm-d's kv-cache manager, Dynamo's KV router, production-stack's
// kvaware router) can follow an emulated worker's residency.
//
// Contract:
//
//   - Encoding: a KVEventBatch is msgpack, msgspec's array_like layout:
//     [ts float64, [event...], data_parallel_rank int]; an event is a
//     tagged array whose first element is the class name:
//     ["BlockStored", block_hashes [uint64...], parent_block_hash uint64|nil,
//     token_ids [int...], block_size int, lora_id nil, medium "GPU"],
//     ["BlockRemoved", block_hashes, medium "GPU"], ["AllBlocksCleared"].
//     Encode and Decode are inverse (tested); Decode rejects anything else
//     with a precise error.
//   - Transport: a ZMQ PUB socket (pure Go, github.com/go-zeromq/zmq4);
//     each batch is one 3-frame message (topic, 8-byte big-endian sequence
//     number, payload), sequence numbers start at 0 and grow by one per
//     batch, exactly like vLLM's ZmqEventPublisher. Publish never blocks
//     the caller (a bounded queue; a full queue drops the batch and
//     counts it in Dropped, so a gap in the sequence numbers is visible to
//     the subscriber as vLLM's would be).
//   - Index replays batches into per-worker block sets (what a router
//     keeps); it is what the tests compare with the workers' residency.
//
// Block hashes are pdemu's chained prompt hashes (docs/SERVE.md "KV-cache
// events" gives the function, so a consumer can recompute them from the
// prompt text); token_ids are empty (pdemu has no vocabulary).
package kvevents

// Package fleetserve runs `pdemu serve --endpoints workers`: every prefill,
// decode and fused worker of a scenario as its own vLLM-compatible OpenAI server
// on its own loopback port, with its own /metrics, /health and /v1/models
// (package serve's handlers, one serve.Server per worker), its own ZMQ
// KV-events publisher (package kvevents), vLLM's P/D hand-off through
// kv_transfer_params, and an admin API that adds and drains workers at run
// time. The emulation is package fleet's pure core, driven on the wall
// clock (emulated = wall × time scale) by one goroutine.
//
// Contract:
//
//   - The scenario's router is bypassed: whoever sends a request chose its
//     worker (a gateway, a router under test, curl).
//   - Every request accepted by a worker's server ends exactly once
//     (completed or failed with a reason), also across drains and the
//     final shutdown; Run returns only when every one ended, then returns
//     the run's outputs (actors.Result: per_request.csv with the worker
//     that served each request, its mode — Vanilla for a prefill call,
//     Seed for a decode call whose KV was pulled, Direct for one prefilled
//     locally, Fused for a fused worker's — and its transfer bytes; links.csv with the KV transfers).
//   - The listing (GET /admin/workers on the admin address, and
//     Options.EndpointsFile, rewritten on every change) names every worker
//     that is starting, ready or draining: worker, role, URL, KV events
//     address and topic, state.
//   - Loopback only unless Options.AllowRemote, as package serve.
//
// docs/SERVE.md ("One endpoint per worker") is the user's guide.
package fleetserve

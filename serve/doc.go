// Package serve puts an emulated cluster behind an OpenAI-compatible HTTP
// API with live Prometheus metrics (`pdemu serve`).
//
// Contract:
//
//   - The server knows the cluster only through the Cluster interface: it
//     turns each HTTP request into a workload.Request (text → tokens →
//     24-token prefix-chained block hashes, session identity, turn index,
//     output length; see tokens.go and docs/SERVE.md), submits it, and
//     relays the cluster's events (first token, each token, done, failed)
//     to the client as they come: one SSE chunk per emulated token.
//   - Every accepted request is consumed to its end exactly once, even when
//     the client disconnects or stops reading: the handler keeps draining
//     the cluster's events (and recording metrics) until Done or Failed.
//     Nothing the cluster runs is lost or leaks.
//   - Bad input never panics: malformed JSON, wrong types, unknown models,
//     oversized bodies and prompts get OpenAI-style error bodies
//     ({"error":{"message","type","param","code"}}) with the matching HTTP
//     status; more than Options.MaxInFlight requests in flight get 429 with
//     Retry-After (a request holds its slot until its answer's last bytes
//     are written, a stream's just before its data: [DONE]); while draining, new requests get 503. Every response has
//     an X-Request-Id (echoed or generated).
//   - What each client saw is measured, not assumed: a Cluster that runs on
//     a wall clock (Bridge) is told, per emulated request, when its first
//     token and its answer's end were written, counted from the request's
//     arrival at the handler (metrics.ClientTimes; client.go).
//   - Safe by default: Options.Listen defaults to a loopback address and a
//     non-loopback one is refused unless Options.AllowRemote is set.
//   - Metrics live on the server's own prometheus.Registry (never the
//     global one): vLLM-compatible names labelled per worker plus pdemu_*.
//     Latency histograms are in emulated seconds (at time-scale 1 they are
//     wall seconds too).
package serve

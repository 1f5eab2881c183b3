package cluster

import (
	"time"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/policy"
	"github.com/pdemu/pdemu/policy/bucket"
	"github.com/pdemu/pdemu/workload"
)

// The messages between the nodes. A *gpu.Job in a message hands the Job
// over: the sender does not touch it afterwards (Protocol says who owns it).
type (
	// Start starts the driver (sent by the runtime, from no node).
	Start struct{}
	// Release is the driver's timer for releasing Req.
	Release struct{ Req *workload.Request }
	// RequestEnded tells the driver that Req ended (closed loop).
	RequestEnded struct{ Req *workload.Request }
	// EndOfInput tells the driver of an open-ended run (Cluster.OpenEnded)
	// that no more requests will come from outside.
	EndOfInput struct{}
	// Abort tells a decode worker that request ID's client went away (a
	// served run): the worker aborts it if it holds it, else remembers it
	// and aborts it when it arrives (gpu.DecodeWorker.Abort).
	Abort struct{ ID int64 }
	// AbortDone tells a decode worker that request ID ended: it forgets
	// the Abort it may still remember.
	AbortDone struct{ ID int64 }
	// DriverDone tells the collector how many requests were released.
	DriverDone struct{ Total int }
	// NewJob hands a released request to the router.
	NewJob struct{ Job *gpu.Job }
	// Admit asks a decode worker to admit Job (Algorithm 2). It lends
	// the router's *Admission to the worker, which answers in it.
	Admit struct{ *Admission }
	// AdmitReply is the decode worker's answer (Mode == ModeNone: rejected
	// for Reason), in the Admission of the Admit, given back to the
	// router.
	AdmitReply struct{ *Admission }
	// RunJob makes decode worker run Job Direct without admission.
	RunJob struct{ Job *gpu.Job }
	// Prefill sends Job to a prefill worker.
	Prefill struct{ Job *gpu.Job }
	// Transfer hands a prefilled Job to the link towards its decode worker.
	Transfer struct{ Job *gpu.Job }
	// KVReady delivers a Job whose KV arrived (or whose transfer failed).
	KVReady struct{ Job *gpu.Job }
	// Finished tells the router that decode worker D finished a request.
	Finished struct{ D int }
	// Evicted tells the router that decode worker D dropped Session's KV
	// at At, why, and for which request (gpu.Event's For). It is sent as
	// an immutable *Evicted (cluster/kvcause.go).
	Evicted struct {
		D       int
		Session int32
		At      time.Duration
		Cause   gpu.EvictCause
		For     int64
	}
	// JobEnded hands a completed or failed Job to the collector.
	JobEnded struct{ Job *gpu.Job }
	// ViewReq asks a bucket for its BucketView for Job's request.
	ViewReq struct{ Job *gpu.Job }
	// ViewResp answers ViewReq for request ID.
	ViewResp struct {
		ID   int64
		View bucket.BucketView
	}
	// Assign hands Job to the bucket the global router chose.
	Assign struct {
		Job *gpu.Job
		Dec bucket.GlobalDecision
	}
	// Submit is a bucket's timer: hand Job to instance Inst after the
	// local router's probe latency.
	Submit struct {
		Job  *gpu.Job
		Inst int
	}
	// Wake is a node's timer for its next event, sent by Host as a *Wake
	// that stays the Host's (it reuses it once delivered).
	Wake struct{ At time.Duration }

	// Failed ends the run with Err (to RunAddr).
	Failed struct{ Err error }
	// Done says every released request ended (to RunAddr).
	Done struct{}
	// Progress reports Ended requests at emulated time At (to RunAddr, as
	// a *Progress valid until the collector's next call).
	Progress struct {
		Ended int
		At    time.Duration
	}
)

// Admission is one admission round trip (Admit, then AdmitReply): Job and
// DS from the router, D, Mode and Reason from the decode worker. Sent
// wrapped in one pointer, Admit and AdmitReply box into an interface
// without an allocation, and the router reuses the Admission once it
// handled the reply. Ownership: the router's until it sends Admit; the
// decode worker's until it sends AdmitReply (it writes the answer fields
// and keeps no reference); the router's again, which reads it during
// that Handle only and then recycles it.
type Admission struct {
	Job    *gpu.Job
	DS     *policy.Dispatch
	D      int
	Mode   policy.Mode
	Reason string
}

// Hop is one row of the protocol: a message, who sends it to whom, what it
// carries, and who owns the Job once it is sent.
type Hop struct {
	Msg      any // the message's zero value (or a pointer to it, if sent as a pointer)
	From, To Kind
	Payload  string
	// Owner is the node that owns the Job after the send ("-" when the
	// message carries no Job).
	Owner string
}

// Protocol is the message protocol, one row per (message, sender,
// receiver). The package documentation renders it (TestProtocolDoc), and
// TestProtocolWalk checks that the nodes send exactly these hops.
var Protocol = []Hop{
	{Start{}, KindRun, KindDriver, "—", "-"},
	{Release{}, KindDriver, KindDriver, "request (timer at its release time)", "-"},
	{Release{}, KindRun, KindDriver, "request from outside, released now (open-ended runs)", "-"},
	{EndOfInput{}, KindRun, KindDriver, "— (open-ended runs: no more requests from outside)", "-"},
	{Abort{}, KindRun, KindDecode, "request id whose client went away (served runs)", "-"},
	{AbortDone{}, KindRun, KindDecode, "request id that ended: forget its Abort", "-"},
	{Abort{}, KindRun, KindBucket, "request id whose client went away (served runs)", "-"},
	{AbortDone{}, KindRun, KindBucket, "request id that ended: forget its Abort", "-"},
	{NewJob{}, KindDriver, KindRouter, "new Job (P = D = -1, Arrival set)", "router"},
	{NewJob{}, KindDriver, KindGlobal, "new Job", "global router"},
	{DriverDone{}, KindDriver, KindCollector, "requests released in total", "-"},
	{Failed{}, KindDriver, KindRun, "trace error", "-"},

	{Admit{}, KindRouter, KindDecode, "Job, dispatch state", "decode worker (until it replies)"},
	{AdmitReply{}, KindDecode, KindRouter, "Job, dispatch, mode or rejection reason", "router (Direct: decode worker keeps running it)"},
	{Prefill{}, KindRouter, KindPrefill, "Job with Mode, P, D set", "prefill worker"},
	{RunJob{}, KindRouter, KindDecode, "Job to run Direct without admission", "decode worker"},
	{Transfer{}, KindPrefill, KindLink, "prefilled Job", "link"},
	{KVReady{}, KindLink, KindDecode, "Job with its transfer timeline (or failure)", "decode worker"},
	{Finished{}, KindDecode, KindRouter, "decode index", "-"},
	{&Evicted{}, KindDecode, KindRouter, "decode index, session, time, cause, request", "-"},
	{JobEnded{}, KindDecode, KindCollector, "ended Job", "collector"},
	{SyncReq{}, KindDecode, KindPrefill, "D→P sync: session, blocks, KV tokens (dp_sync)", "-"},
	{SyncXfer{}, KindPrefill, KindLink, "D→P sync to put on the wire", "-"},
	{SyncDone{}, KindLink, KindPrefill, "D→P sync landed: the backup advances", "-"},

	{ViewReq{}, KindGlobal, KindBucket, "Job (read only: the global router keeps it)", "global router"},
	{ViewResp{}, KindBucket, KindGlobal, "request id, BucketView", "-"},
	{Assign{}, KindGlobal, KindBucket, "Job, global decision", "bucket"},
	{JobEnded{}, KindGlobal, KindCollector, "Job failed: no bucket, or longer than the context", "collector"},
	{Submit{}, KindBucket, KindBucket, "Job, instance (timer: probe latency)", "bucket"},
	{JobEnded{}, KindBucket, KindCollector, "ended Job", "collector"},

	{RequestEnded{}, KindCollector, KindDriver, "request", "-"},
	{&Progress{}, KindCollector, KindRun, "requests ended, emulated time", "-"},
	{Done{}, KindCollector, KindRun, "—", "-"},
	{Failed{}, KindCollector, KindRun, "record error", "-"},

	// Faults (faults.go): the driver injects the schedule.
	{InjectTick{}, KindDriver, KindDriver, "— (timer: the schedule's next actions, at most 1 s ahead)", "-"},
	{Crash{}, KindDriver, KindDecode, "fault id (timer: the crash time)", "-"},
	{Crash{}, KindDriver, KindPrefill, "fault id (timer: the crash time)", "-"},
	{Restart{}, KindDriver, KindDecode, "fault id (timer: the restart time)", "-"},
	{Restart{}, KindDriver, KindPrefill, "fault id (timer: the restart time)", "-"},
	{Slowdown{}, KindDriver, KindDecode, "fault id, factor (timer; factor 1 ends it)", "-"},
	{Slowdown{}, KindDriver, KindPrefill, "fault id, factor (timer; factor 1 ends it)", "-"},
	{Health{}, KindDriver, KindRouter, "node or link down/up (timer: fault or end + detection delay)", "-"},
	{Health{}, KindDriver, KindPrefill, "node or link down/up (timer: fault or end + detection delay)", "-"},
	{Retry{}, KindDecode, KindRouter, "Job hit by a fault (Failed, FaultHit set)", "router"},
	{Retry{}, KindPrefill, KindRouter, "Job hit by a fault (Failed, FaultHit set)", "router"},
	{Retry{}, KindRouter, KindRouter, "Job that found no healthy decode worker (timer: detection delay)", "router"},
	{KVReady{}, KindPrefill, KindDecode, "Job its prefill worker cannot serve (Failed set): the reservation is released", "decode worker"},
	{KVReady{}, KindRouter, KindDecode, "admitted Job no prefill worker can reach (Failed set): the reservation is released", "decode worker"},
	{JobEnded{}, KindRouter, KindCollector, "Job failed: retry budget spent, longer than the context, or larger than any pool", "collector"},
	{Crash{}, KindDriver, KindBucket, "fault id: an instance or the whole bucket (timer)", "-"},
	{Restart{}, KindDriver, KindBucket, "fault id (timer)", "-"},
	{Slowdown{}, KindDriver, KindBucket, "fault id, factor (timer)", "-"},
	{Health{}, KindDriver, KindBucket, "instance down/up (timer: + detection delay)", "-"},
	{Health{}, KindDriver, KindGlobal, "bucket down/up (timer: + detection delay)", "-"},
	{Retry{}, KindBucket, KindGlobal, "Job hit by a fault", "global router"},
	{Retry{}, KindGlobal, KindGlobal, "Job whose bucket is down (timer: detection delay)", "global router"},

	{&Wake{}, KindDecode, KindDecode, "wake time (timer)", "-"},
	{&Wake{}, KindPrefill, KindPrefill, "wake time (timer)", "-"},
	{&Wake{}, KindLink, KindLink, "wake time (timer)", "-"},
	{&Wake{}, KindBucket, KindBucket, "wake time (timer)", "-"},
}

package metrics

import (
	"time"

	"github.com/pdemu/pdemu/gpu"
)

// TTFTParts splits a request's time to first token into consecutive
// phases. Each part is the distance between two consecutive points of the
// job's timeline, so the parts add up to FirstToken − Arrival exactly:
//
//	Arrival ─route→ P got it ─p_queue→ prefill start ─prefill→ prefill end
//	  ─transfer→ D got it ─kv_wait→ KV reserved ─d_prefill→ append-prefill end
//	  ─first_token→ first token
//
// Points a request does not pass (no prefill worker for Direct and Fused
// requests, no append-prefill for Seed/Fallback/Vanilla) take the previous
// point, so their part is 0. See docs/OUTPUTS.md for each part's meaning.
type TTFTParts struct {
	Route      time.Duration // router and admission: arrival until a prefill worker (or, without one, the decode/fused worker) got the job
	PQueue     time.Duration // queue on the prefill worker
	Prefill    time.Duration // prefill on the prefill worker (its whole batch)
	Transfer   time.Duration // prefill end (or, fused, prefix fetch start) until the decode/fused worker got the job: link queue and KV transfer
	KVWait     time.Duration // wait for KV room on the decode/fused worker
	DPrefill   time.Duration // append-prefill on D: its queue, a DRAM-tier load (fused) and the chunked prefill
	FirstToken time.Duration // KV in place until the first token: wait for a batch slot
}

// TTFTPartNames are the part names in timeline order (the ttft_<name>_ms
// columns of per_request.csv and the keys of summary.json ttft_parts_ms).
var TTFTPartNames = []string{"route", "p_queue", "prefill", "transfer", "kv_wait", "d_prefill", "first_token"}

// Slice returns the parts in TTFTPartNames order.
func (p TTFTParts) Slice() []time.Duration {
	return []time.Duration{p.Route, p.PQueue, p.Prefill, p.Transfer, p.KVWait, p.DPrefill, p.FirstToken}
}

// Sum is the total of the parts (== the TTFT).
func (p TTFTParts) Sum() time.Duration {
	var t time.Duration
	for _, d := range p.Slice() {
		t += d
	}
	return t
}

// SplitTTFT splits j's time to first token (see TTFTParts). A point that
// is 0 was not reached and takes the previous one. The sum is always
// FirstToken − Arrival; a negative part means the job's timeline is out of
// order, which the property tests (metrics and output) look for.
func SplitTTFT(j *gpu.Job) TTFTParts {
	cur := j.Arrival
	next := func(at time.Duration, reached bool) time.Duration {
		d := time.Duration(0)
		if reached && at != 0 {
			d = at - cur
			cur = at
		}
		return d
	}
	usesP := j.Mode.UsesPrefill() && j.P >= 0
	fetched := !usesP && j.TransferStart != 0 // fused: a prefix fetched over the bucket fabric
	var p TTFTParts
	switch {
	case usesP:
		p.Route = next(j.PQueued, true)
	case fetched:
		p.Route = next(j.TransferStart, true)
	default:
		p.Route = next(j.DGot, true)
	}
	p.PQueue = next(j.PrefillStart, usesP)
	p.Prefill = next(j.PrefillEnd, usesP)
	p.Transfer = next(j.DGot, usesP || fetched)
	// A Seed/Reseed's KV was reserved when it was admitted, before its
	// prefill: no wait on arrival.
	p.KVWait = next(max(j.KVReserved, j.DGot), j.KVReserved != 0)
	p.DPrefill = next(j.DPrefillEnd, !usesP)
	p.FirstToken = next(j.FirstToken, true)
	return p
}

// At is the i-th part in TTFTPartNames order (0 out of range).
func (p *TTFTParts) At(i int) time.Duration {
	switch i {
	case 0:
		return p.Route
	case 1:
		return p.PQueue
	case 2:
		return p.Prefill
	case 3:
		return p.Transfer
	case 4:
		return p.KVWait
	case 5:
		return p.DPrefill
	case 6:
		return p.FirstToken
	}
	return 0
}

package metrics

import "github.com/pdemu/pdemu/gpu"

// Where names the phase a job was in when a partial run stopped, from its
// timeline: the TTFT part it was in (route, p_queue, prefill, transfer,
// kv_wait, d_prefill, first_token; see TTFTParts) or decode once its
// first token came. per_request.csv gives it as "in <phase>" in the
// reason column of unfinished requests.
func Where(j *gpu.Job) string {
	if j.FirstToken > 0 {
		return "decode"
	}
	// One phase order; the P/D steps apply to a job with a prefill
	// worker, d_prefill to one without (it prefills on its decode worker).
	pd := j.Mode.UsesPrefill() && j.P >= 0
	switch {
	case pd && j.PQueued == 0:
		return "route"
	case pd && j.PrefillStart == 0:
		return "p_queue"
	case pd && j.PrefillEnd == 0:
		return "prefill"
	case pd && (j.DGot == 0 || j.DGot < j.PrefillEnd):
		return "transfer"
	case j.DGot == 0 && j.TransferStart != 0:
		return "transfer" // fused: a prefix fetch over the bucket fabric
	case j.DGot == 0:
		return "route"
	case j.KVReserved == 0:
		return "kv_wait"
	case !pd && j.DPrefillEnd == 0:
		return "d_prefill"
	}
	return "first_token"
}

// unfinishedReason is the reason column of an unfinished request: where it
// was, then the admission rejections it had, ';'-separated.
func unfinishedReason(j *gpu.Job) string {
	s := "in " + Where(j)
	if len(j.Reasons) > 0 {
		s += ";" + JoinReasons(j.Reasons)
	}
	return s
}

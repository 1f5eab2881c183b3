package metrics

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/policy"
	"github.com/pdemu/pdemu/workload"
)

func TestWhere(t *testing.T) {
	r := &workload.Request{ID: 1}
	pd := func(f func(j *gpu.Job)) *gpu.Job {
		j := &gpu.Job{Req: r, Mode: policy.ModeSeed, P: 0, D: 1, Arrival: 10}
		f(j)
		return j
	}
	direct := func(f func(j *gpu.Job)) *gpu.Job {
		j := &gpu.Job{Req: r, Mode: policy.ModeDirect, P: -1, D: 1, Arrival: 10}
		f(j)
		return j
	}
	for _, c := range []struct {
		want string
		job  *gpu.Job
	}{
		{"route", &gpu.Job{Req: r, P: -1, D: -1, Arrival: 10}},
		{"route", pd(func(j *gpu.Job) {})},
		{"p_queue", pd(func(j *gpu.Job) { j.PQueued = 11 })},
		{"prefill", pd(func(j *gpu.Job) { j.PQueued, j.PrefillStart = 11, 12 })},
		{"transfer", pd(func(j *gpu.Job) { j.PQueued, j.PrefillStart, j.PrefillEnd = 11, 12, 13 })},
		{"kv_wait", pd(func(j *gpu.Job) {
			j.Mode = policy.ModeFallback
			j.PQueued, j.PrefillStart, j.PrefillEnd, j.DGot = 11, 12, 13, 14
		})},
		{"first_token", pd(func(j *gpu.Job) {
			j.KVReserved, j.PQueued, j.PrefillStart, j.PrefillEnd, j.DGot = 10, 11, 12, 13, 14
		})},
		{"decode", pd(func(j *gpu.Job) { j.FirstToken = 20 })},
		{"route", direct(func(j *gpu.Job) {})},
		{"d_prefill", direct(func(j *gpu.Job) { j.DGot, j.KVReserved = 11, 11 })},
		{"kv_wait", direct(func(j *gpu.Job) { j.DGot = 11 })},
		{"first_token", direct(func(j *gpu.Job) { j.DGot, j.KVReserved, j.DPrefillEnd = 11, 11, 12 })},
		{"transfer", &gpu.Job{Req: r, Mode: policy.ModeFused, P: -1, D: 0, Arrival: 10, TransferStart: 11}},
	} {
		assert.Equal(t, c.want, Where(c.job), "%+v", c.job)
	}
	j := pd(func(j *gpu.Job) { j.Reasons = []string{"no-d-capacity"} })
	assert.Equal(t, "in route;no-d-capacity", NewCollector([]string{"p0"}, []string{"d0", "d1"}).Unfinished(j).Reason)
}

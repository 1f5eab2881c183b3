package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/policy"
	"github.com/pdemu/pdemu/workload"
)

// fakeBL is a blacklister: d is blacklisted for every session.
type fakeBL struct {
	RouterPolicy
	d int
}

func (f fakeBL) Blacklisted(_ int32, d int) bool { return d == f.d }

// TestKVCauseTable walks every branch of kvCauses.cause.
func TestKVCauseTable(t *testing.T) {
	job := func(turn int) *gpu.Job { return &gpu.Job{Req: &workload.Request{ID: 9, Session: 2, Turn: turn}} }
	ds := func(reasons ...string) *policy.Dispatch {
		d := policy.NewDispatch(&workload.Request{Session: 2})
		d.Reasons = reasons
		return d
	}
	step := func(m policy.Mode, d int) policy.Step { return policy.Step{Action: policy.ActPrefill, Mode: m, D: d} }
	names := []string{"d0", "d1", "d2"}
	for _, tc := range []struct {
		name  string
		setup func(c *kvCauses)
		pol   RouterPolicy
		ds    *policy.Dispatch
		st    policy.Step
		want  string
	}{
		{"seed", nil, nil, ds(), step(policy.ModeSeed, 0), CauseFirstTurn},
		{"fallback rejected", nil, nil, ds("real-large-append", "no-d-capacity"), step(policy.ModeFallback, 1), "rejected:real-large-append+no-d-capacity"},
		{"fallback blacklisted", nil, fakeBL{d: 0}, ds(), step(policy.ModeFallback, 1), CauseBlacklisted},
		{"fallback unexplained", nil, nil, ds(), step(policy.ModeFallback, 1), ""},
		{"reseed never resident", nil, nil, ds(), step(policy.ModeReseed, 1), CauseNeverResident},
		{"reseed evicted here", func(c *kvCauses) { c.placed(2, 1); c.lost(2, 1, 12345e6, gpu.EvictCapacity, 77) }, nil, ds(), step(policy.ModeReseed, 1), "capacity@12.345s-for-r77"},
		{"reseed evicted elsewhere", func(c *kvCauses) { c.placed(2, 0); c.lost(2, 0, 2e9, gpu.EvictTransferFailed, 5) }, nil, ds(), step(policy.ModeReseed, 2), "transfer-failed@2.000s-r5-on-d0"},
		{"stale copy lost: ignored", func(c *kvCauses) { c.placed(2, 0); c.lost(2, 1, 1e9, gpu.EvictCapacity, 3) }, nil, ds(), step(policy.ModeReseed, 2), CauseRerouted},
		{"reseed crashed", func(c *kvCauses) { c.placed(2, 1); c.crashed(1, 3e9) }, nil, ds(), step(policy.ModeReseed, 0), "worker-crashed@3.000s-on-d1"},
		{"reseed after rejection", func(c *kvCauses) { c.placed(2, 0) }, nil, ds("real-large-append"), step(policy.ModeReseed, 1), "rejected:real-large-append"},
		{"reseed away from a blacklist", func(c *kvCauses) { c.placed(2, 0) }, fakeBL{d: 0}, ds(), step(policy.ModeReseed, 1), CauseBlacklisted},
		{"reseed rerouted", func(c *kvCauses) { c.placed(2, 0) }, fakeBL{d: 2}, ds(), step(policy.ModeReseed, 1), CauseRerouted},
		{"reseed same worker, nothing lost", func(c *kvCauses) { c.placed(2, 1) }, nil, ds(), step(policy.ModeReseed, 1), ""},
		{"placement clears a loss", func(c *kvCauses) { c.placed(2, 1); c.lost(2, 1, 1e9, gpu.EvictCapacity, 1); c.placed(2, 1) }, nil, ds(), step(policy.ModeReseed, 1), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &kvCauses{names: names}
			if tc.setup != nil {
				tc.setup(c)
			}
			assert.Equal(t, tc.want, c.cause(tc.pol, job(3), tc.ds, tc.st))
		})
	}
}

package metrics

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func sloRec(id int64, sess int32, arrival, ttft, tpot time.Duration, failed bool) Record {
	r := Record{ID: id, SessionIdx: sess, Arrival: arrival, TTFT: ttft, TPOT: tpot, E2E: ttft + 10*tpot, Failed: failed, Mode: "Direct", Reason: ""}
	if failed {
		r.TTFT, r.E2E, r.TPOT, r.Reason = -1, -1, -1, "exceeds-context"
	}
	return r
}

// Attainment, goodput, sessions and why requests missed, computed from
// the records; the verdict flags a p99 far beyond the SLO and TTFT that
// grows over the run, naming the tail's dominant part.
func TestTallySLO(t *testing.T) {
	slo := SLO{TTFT: time.Second, TPOT: 50 * time.Millisecond, Attainment: 0.9}
	recs := []Record{
		sloRec(0, 0, 0, 100*time.Millisecond, 10*time.Millisecond, false),
		sloRec(1, 0, time.Second, 2*time.Second, 10*time.Millisecond, false),          // ttft
		sloRec(2, 1, 2*time.Second, 100*time.Millisecond, 60*time.Millisecond, false), // tpot
		sloRec(3, 1, 3*time.Second, 0, 0, true),                                       // failed
		sloRec(4, 2, 4*time.Second, 300*time.Millisecond, 10*time.Millisecond, false),
		sloRec(5, 2, 5*time.Second, 300*time.Millisecond, -1, false), // one output token: no TPOT
		sloRec(6, 3, 6*time.Second, 200*time.Millisecond, 10*time.Millisecond, false),
		sloRec(7, 3, 7*time.Second, 200*time.Millisecond, 10*time.Millisecond, false),
	}
	tl := TallyOf(recs)
	s := tl.Summary()
	s.EmulatedSeconds = 10
	o := tl.SLO(slo, s)
	assert.Equal(t, 5, o.Met)
	assert.Equal(t, 0.625, o.Attainment)
	assert.False(t, o.OK)
	assert.Equal(t, map[string]int{"failed": 1, "ttft": 1, "tpot": 1, "e2e": 0}, o.Missed)
	assert.Equal(t, 0.5, o.GoodputRPS)
	assert.Equal(t, 4, o.Sessions)
	assert.Equal(t, 2, o.SessionsMet, "sessions 2 and 3")
	assert.False(t, o.Overloaded)
	s.SLO = o
	assert.Contains(t, Warnings(s), "SLO missed: 62.5% of requests met it (ttft <= 1s, tpot <= 50ms), target 90%; missed for ttft 1, tpot 1, e2e 0, failed 1")

	// Growing queues: TTFT climbs from 0.1 s to 30 s over the run.
	var grow []Record
	for i := range 40 {
		grow = append(grow, sloRec(int64(i), int32(i), time.Duration(i)*time.Second, time.Duration(100+i*i*20)*time.Millisecond, 10*time.Millisecond, false))
	}
	tl = TallyOf(grow)
	s = tl.Summary()
	o = tl.SLO(slo, s)
	assert.True(t, o.Overloaded)
	assert.Greater(t, o.LastQuarterTTFTMs, OverloadGrowth*o.FirstQuarterTTFTMs)
	assert.Contains(t, o.Verdict, "p99 TTFT 30.5 s is 31× the SLO's 1.0 s")
	assert.Contains(t, o.Verdict, "queues grow over the run")

	// Unchecked thresholds are not applied.
	o = tl.SLO(SLO{Attainment: 0.9}, s)
	assert.Equal(t, 40, o.Met)
	assert.True(t, o.OK)
	assert.Equal(t, "no threshold: completed", o.Thresholds())
}

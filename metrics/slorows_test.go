package metrics

import (
	"sort"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// refSLO is the SLO as computed before sloRows: from a 40-byte row per
// ended request kept in a slice, quarters by a stable sort of a copy.
// Each row is scored as Tally.SLO scores it (score, finish): what is
// checked is the compact rows' store and quarters, not the scoring.
func refSLO(added []Record, slo SLO, s Summary) *SLOSummary {
	var rows []sloRow
	for _, r := range added {
		if r.State == StateUnfinished || r.State == StateAborted {
			continue
		}
		rows = append(rows, sloRow{sess: r.SessionIdx, failed: r.Failed, arrival: r.Arrival, ttft: r.TTFT, tpot: r.TPOT, e2e: r.E2E})
	}
	out, bad := newSLOSummary(slo), &sessVerdicts{}
	for _, r := range rows {
		out.score(slo, r, bad)
	}
	out.finish(slo, s, len(rows), bad)
	sorted := append([]sloRow(nil), rows...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].arrival < sorted[j].arrival })
	if q := len(sorted) / 4; q > 0 {
		mean := func(rs []sloRow) float64 {
			var sum time.Duration
			k := 0
			for _, r := range rs {
				if !r.failed {
					sum += r.ttft
					k++
				}
			}
			if k == 0 {
				return 0
			}
			return round3(ms(sum) / float64(k))
		}
		out.FirstQuarterTTFTMs, out.LastQuarterTTFTMs = mean(sorted[:q]), mean(sorted[len(sorted)-q:])
	}
	out.overload(s)
	return out
}

// TestSLORowsEqualReference: the compact rows give the SLO the kept
// 40-byte rows gave, for any records in any end order (ties of arrival
// at the quarters' bounds, failures, aborted requests, undefined TPOTs,
// negative sessions and arrivals far apart).
func TestSLORowsEqualReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		recs := genRecords(t)
		for i := range recs {
			r := &recs[i]
			switch rapid.IntRange(0, 9).Draw(t, "state") {
			case 0:
				if !r.Failed {
					r.State = StateAborted
				}
			case 1:
				r.SessionIdx = -r.SessionIdx - 1
			case 2:
				r.Arrival = time.Duration(rapid.Int64Range(0, 1<<62).Draw(t, "far"))
			case 3:
				r.Arrival = 0 // ties
			}
		}
		order := rapid.Permutation(recs).Draw(t, "end order")
		tl := NewTally()
		for i := range order {
			tl.Add(&order[i])
		}
		slo := SLO{TTFT: time.Duration(rapid.IntRange(0, 12).Draw(t, "sloTTFT")) * time.Millisecond,
			TPOT: time.Duration(rapid.IntRange(0, 1e7).Draw(t, "sloTPOT")), E2E: time.Duration(rapid.IntRange(0, 2e9).Draw(t, "sloE2E")),
			Attainment: 0.9}
		s := tl.Summary()
		if got, want := jsonOf(t, tl.SLO(slo, s)), jsonOf(t, refSLO(order, slo, s)); got != want {
			t.Fatalf("slo\n got %s\nwant %s", got, want)
		}
	})
}

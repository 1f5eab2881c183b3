package metrics

import (
	"encoding/csv"
	"io"
	"strconv"
	"time"
)

// FaultRecord is one fault of a run (faults.csv, summary.json "faults"):
// what was hit, when the routers learnt of it, what it did to the
// requests, and how long the run took to recover.
type FaultRecord struct {
	ID     int
	Kind   string // crash, slow, cut
	Target string // decode, prefill, link
	Node   string // worker name, or prefill/device for a NIC
	At     time.Duration
	End    time.Duration // restart or restore; -1: never
	Factor float64       // slow
	Chaos  bool          // drawn by the chaos block
	// Detected is when the router learnt of it (-1: never, e.g. a
	// slowdown, or the run ended first).
	Detected time.Duration
	// Lost: requests on the node when it crashed; LostSessions: sessions
	// whose resident KV it destroyed.
	Lost, LostSessions int
	// Retried, Failed: requests it hit that were dispatched again, and
	// that failed because the retry budget was spent. Reseeded: sessions
	// the router believed resident on the node whose next request was
	// prefilled again (elsewhere, or on the node after its restart).
	Retried, Failed, Reseeded int
	// Recovery: from the fault until the Direct share and the mean TTFT
	// of a window of requests arriving after it are back to their level
	// before the fault (see Recover); -1 when they never were.
	Recovery time.Duration
}

// FaultsUntil keeps the faults that happened by end (the end of the run):
// a fault scheduled later never happened, and nothing the run learnt after
// its end counts.
func FaultsUntil(faults []FaultRecord, end time.Duration) []FaultRecord {
	var out []FaultRecord
	for _, f := range faults {
		if f.At > end {
			continue
		}
		if f.Detected > end {
			f.Detected = -1
		}
		if f.End > end {
			f.End = -1
		}
		out = append(out, f)
	}
	return out
}

// RecoveryWindow is the width of the windows Recover compares; a window
// counts as recovered when its Direct share is at least RecoveryShare of
// the pre-fault window's and its mean TTFT at most RecoveryTTFT times it.
const (
	RecoveryWindow = 10 * time.Second
	RecoveryShare  = 0.9
	RecoveryTTFT   = 1.2
)

// Recover fills each fault's Recovery from the records (sorted or not):
// the pre-fault level is that of the completed requests arriving in the
// RecoveryWindow before the fault; windows of the same width are then
// slid from the fault to the last arrival in steps of a tenth of it, and
// the recovery ends with the last window (holding a completed request)
// below that level: the run is back to its level for good from then on.
// 0: no window was below it (or no request came before the fault); -1:
// the last window of the run still was.
func Recover(faults []FaultRecord, recs []Record) {
	if len(faults) == 0 {
		return
	}
	ats := make([]time.Duration, len(faults))
	for i := range faults {
		ats[i] = faults[i].At
	}
	rc := newRecovery(ats)
	for i := range recs {
		rc.add(recoverRow(&recs[i]))
	}
	rc.fill(faults)
}

// RecoverRow is what Recover reads of a record.
type RecoverRow struct {
	ID            int64
	Arrival, TTFT time.Duration
	Failed        bool
	Direct        bool // served Direct
}

func recoverRow(r *Record) RecoverRow {
	return RecoverRow{ID: r.ID, Arrival: r.Arrival, TTFT: r.TTFT, Failed: r.Failed, Direct: r.Mode == "Direct"}
}

// FaultColumns are faults.csv's columns.
var FaultColumns = []string{"id", "kind", "target", "node", "at_ms", "end_ms", "factor", "chaos", "detected_ms",
	"lost_requests", "lost_sessions", "retried", "failed", "reseeded", "recovery_ms"}

// WriteFaults writes faults.csv (a header only when the run had no fault).
func WriteFaults(w io.Writer, faults []FaultRecord) error {
	return writeCSV(w, FaultColumns, func(cw *csv.Writer) error {
		ms := func(d time.Duration) string {
			if d < 0 {
				return ""
			}
			return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64)
		}
		for _, f := range faults {
			factor := ""
			if f.Factor > 0 {
				factor = strconv.FormatFloat(f.Factor, 'g', -1, 64)
			}
			if err := cw.Write([]string{strconv.Itoa(f.ID), f.Kind, f.Target, f.Node, ms(f.At), ms(f.End), factor,
				strconv.FormatBool(f.Chaos), ms(f.Detected), strconv.Itoa(f.Lost), strconv.Itoa(f.LostSessions),
				strconv.Itoa(f.Retried), strconv.Itoa(f.Failed), strconv.Itoa(f.Reseeded), ms(f.Recovery)}); err != nil {
				return err
			}
		}
		return nil
	})
}

// FaultSummary is summary.json's "faults" (only runs with faults).
type FaultSummary struct {
	Events   int `json:"events"`
	Retried  int `json:"requests_retried"`
	Failed   int `json:"requests_failed"`
	Reseeded int `json:"sessions_reseeded"`
	Lost     int `json:"requests_lost"`
	// DetectionMS: mean time from a fault to its detection; RecoveryMS:
	// the longest recovery (-1 when a fault never recovered).
	DetectionMS float64       `json:"mean_detection_ms"`
	RecoveryMS  float64       `json:"max_recovery_ms"`
	List        []FaultReport `json:"list"`
	// Restarts: the actor runtime's supervisor restarts per actor (an
	// injected crash fails the node's actor; filled by package actors).
	Restarts map[string]int `json:"actor_restarts,omitempty"`
	// NodeRestarts counts, per node (worker, fused instance or bucket; a
	// NIC's restores are not restarts), the crashes it came back from by
	// the end of the run: every node kind, whether or not its crash was an
	// actor failure (a fused instance's is not).
	NodeRestarts map[string]int `json:"node_restarts,omitempty"`
	// NotReached lists the faults scheduled after the run's end (absent
	// when none): they never happened, and are not in List or faults.csv.
	NotReached []FaultReport `json:"not_reached,omitempty"`
}

// NotReached returns the faults scheduled after end (the run's end), as
// summary.json faults.not_reached lists them.
func NotReached(faults []FaultRecord, end time.Duration) []FaultReport {
	var out []FaultReport
	for _, f := range faults {
		if f.At > end {
			out = append(out, FaultReport{Kind: f.Kind, Node: f.Node, AtMS: float64(f.At) / 1e6, DetectedMS: -1, RecoveryMS: -1})
		}
	}
	return out
}

// FaultReport is one fault in summary.json.
type FaultReport struct {
	Kind       string  `json:"kind"`
	Node       string  `json:"node"`
	AtMS       float64 `json:"at_ms"`
	DetectedMS float64 `json:"detected_ms"`
	Retried    int     `json:"retried"`
	Failed     int     `json:"failed"`
	Reseeded   int     `json:"reseeded"`
	RecoveryMS float64 `json:"recovery_ms"`
}

// SummarizeFaults is the summary of faults (nil when there are none).
func SummarizeFaults(faults []FaultRecord) *FaultSummary {
	if len(faults) == 0 {
		return nil
	}
	ms := func(d time.Duration) float64 {
		if d < 0 {
			return -1
		}
		return float64(d) / 1e6
	}
	s := &FaultSummary{Events: len(faults), List: []FaultReport{}}
	var det float64
	var ndet int
	for _, f := range faults {
		s.Retried += f.Retried
		s.Failed += f.Failed
		s.Reseeded += f.Reseeded
		s.Lost += f.Lost
		if f.Detected >= 0 {
			det += float64(f.Detected-f.At) / 1e6
			ndet++
		}
		switch {
		case f.Recovery < 0 && f.Kind != "slow":
			s.RecoveryMS = -1
		case s.RecoveryMS >= 0:
			s.RecoveryMS = max(s.RecoveryMS, ms(f.Recovery))
		}
		if f.Kind == "crash" && f.End >= 0 {
			if s.NodeRestarts == nil {
				s.NodeRestarts = map[string]int{}
			}
			s.NodeRestarts[f.Node]++
		}
		s.List = append(s.List, FaultReport{Kind: f.Kind, Node: f.Node, AtMS: ms(f.At), DetectedMS: ms(f.Detected),
			Retried: f.Retried, Failed: f.Failed, Reseeded: f.Reseeded, RecoveryMS: ms(f.Recovery)})
	}
	if ndet > 0 {
		s.DetectionMS = det / float64(ndet)
	}
	return s
}

package workload

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"
)

// Dist summarises a token-count distribution.
type Dist struct {
	Mean               float64
	P50, P90, P99, Max int
}

// DurDist summarises a duration distribution (zero when empty).
type DurDist struct {
	N                  int
	Mean               time.Duration
	P50, P90, P99, Max time.Duration
}

// Stats summarises a workload (see ComputeStats).
type Stats struct {
	Requests int
	Sessions int
	// Turns per session.
	TurnsP50, TurnsP90, TurnsMax int
	// Input (prompt), Output and Append tokens over all requests; Append
	// only over turns > 0 (for turn 0 it is the whole prompt).
	Input, Output, Append Dist
	// LargeAppends counts turns > 0 with AppendLen > 8192 (τ_append).
	LargeAppends int
	// InterArrival is the gap between consecutive arrivals of the whole
	// workload; TurnGap the gap between consecutive turns of a session;
	// Think the closed-loop think time of turns > 0.
	InterArrival, TurnGap, Think DurDist
	// Duration is the last arrival minus the first.
	Duration time.Duration
	// BlockTokens is the block size shared by all requests (0 if mixed).
	BlockTokens int
	// TotalBlocks counts all Blocks of all requests, UniqueBlocks the
	// distinct ones; IdealReuse = 1 − UniqueBlocks/TotalBlocks, the block
	// hit ratio of an infinite prefix cache.
	TotalBlocks, UniqueBlocks int64
	IdealReuse                float64
	// MisplacedBlocks counts block hashes seen at a different position than
	// at their first occurrence: hash ids that are not prefix-chained (a
	// trace problem; loaders that pass hash ids through keep them as is).
	MisplacedBlocks int64
}

// ErrContract is wrapped by the errors ComputeStats and Validate return when
// a Source breaks the contract documented in request.go.
var ErrContract = errors.New("workload: source contract violated")

// ComputeStats drains src and summarises it. It also checks the Source
// contract (dense IDs, non-decreasing arrivals, dense sessions with turns
// in order from 0, OutputLen >= 1, 0 <= AppendLen <= InputLen, turn 0 with
// no think time and the whole prompt as append, at most
// ceil(InputLen/BlockTokens) Blocks) and returns an error wrapping
// ErrContract naming the first violation. Memory is O(requests + unique
// blocks).
func ComputeStats(src Source) (Stats, error) {
	var st Stats
	var (
		in, out, app []int
		ia, gaps, th []time.Duration
		turns        []int
		lastArr      []time.Duration
		pos          = map[uint64]int32{}
		first, prev  time.Duration
		bt           = -1
	)
	for {
		r, err := src.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return st, err
		}
		if err := checkRequest(r, int64(st.Requests), prev, turns); err != nil {
			return st, err
		}
		for i, h := range r.Blocks {
			if p, ok := pos[h]; !ok {
				pos[h] = int32(min(i, math.MaxInt32))
			} else if int(p) != i {
				st.MisplacedBlocks++
			}
		}
		if st.Requests == 0 {
			first = r.Arrival
		} else {
			ia = append(ia, r.Arrival-prev)
		}
		prev = r.Arrival
		st.Requests++
		for int(r.Session) >= len(turns) {
			turns = append(turns, 0)
			lastArr = append(lastArr, 0)
		}
		if r.Turn > 0 {
			gaps = append(gaps, r.Arrival-lastArr[r.Session])
			th = append(th, r.Think)
			app = append(app, r.AppendLen)
			if r.AppendLen > 8192 {
				st.LargeAppends++
			}
		}
		turns[r.Session]++
		lastArr[r.Session] = r.Arrival
		in = append(in, r.InputLen)
		out = append(out, r.OutputLen)
		switch {
		case len(r.Blocks) == 0:
		case bt == -1:
			bt = r.BlockTokens
		case bt != r.BlockTokens:
			bt = 0
		}
		st.TotalBlocks += int64(len(r.Blocks))
	}
	for s, n := range turns {
		if n == 0 {
			return st, fmt.Errorf("%w: session indexes are not dense (session %d has no request, %d sessions)", ErrContract, s, len(turns))
		}
	}
	st.Sessions = len(turns)
	st.TurnsP50, st.TurnsP90, st.TurnsMax = pct(turns, 0.5), pct(turns, 0.9), pct(turns, 1)
	st.Input, st.Output, st.Append = dist(in), dist(out), dist(app)
	st.InterArrival, st.TurnGap, st.Think = durDist(ia), durDist(gaps), durDist(th)
	st.Duration = prev - first
	st.BlockTokens = max(bt, 0)
	st.UniqueBlocks = int64(len(pos))
	if st.TotalBlocks > 0 {
		st.IdealReuse = 1 - float64(st.UniqueBlocks)/float64(st.TotalBlocks)
	}
	return st, nil
}

// Validate drains src and checks the Source contract (see ComputeStats).
func Validate(src Source) error {
	_, err := ComputeStats(src)
	return err
}

func checkRequest(r *Request, id int64, prev time.Duration, turns []int) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: request %d: %s", ErrContract, id, fmt.Sprintf(format, args...))
	}
	if r == nil {
		return bad("nil request")
	}
	switch {
	case r.ID != id:
		return bad("ID %d, want %d (dense from 0)", r.ID, id)
	case id > 0 && r.Arrival < prev:
		return bad("arrival %v before the previous %v", r.Arrival, prev)
	case r.Session < 0 || int(r.Session) > len(turns)+1<<20:
		return bad("session %d out of range", r.Session)
	case r.OutputLen < 1:
		return bad("output %d < 1", r.OutputLen)
	case r.InputLen < 0 || r.AppendLen < 0 || r.AppendLen > r.InputLen:
		return bad("input %d, append %d (want 0 <= append <= input)", r.InputLen, r.AppendLen)
	case r.Think < 0:
		return bad("negative think %v", r.Think)
	}
	seen := 0
	if int(r.Session) < len(turns) {
		seen = turns[r.Session]
	}
	if r.Turn != seen {
		return bad("session %d turn %d, want %d (turns in order from 0)", r.Session, r.Turn, seen)
	}
	if r.Turn == 0 && (r.Think != 0 || r.AppendLen != r.InputLen) {
		return bad("turn 0 with think %v and append %d of %d (want 0 and the whole prompt)", r.Think, r.AppendLen, r.InputLen)
	}
	if len(r.Blocks) > 0 {
		if r.BlockTokens < 1 {
			return bad("%d blocks of %d tokens", len(r.Blocks), r.BlockTokens)
		}
		if n := (r.InputLen + r.BlockTokens - 1) / r.BlockTokens; len(r.Blocks) > n {
			return bad("%d blocks for %d tokens of %d-token blocks", len(r.Blocks), r.InputLen, r.BlockTokens)
		}
	}
	return nil
}

// pct is the nearest-rank percentile of xs (sorted in place); p=1 is the max.
func pct[T int | time.Duration](xs []T, p float64) T {
	if len(xs) == 0 {
		return 0
	}
	if !slices.IsSorted(xs) {
		slices.Sort(xs)
	}
	i := int(math.Ceil(p*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

func dist(xs []int) Dist {
	if len(xs) == 0 {
		return Dist{}
	}
	var sum float64
	for _, x := range xs {
		sum += float64(x)
	}
	return Dist{Mean: sum / float64(len(xs)), P50: pct(xs, 0.5), P90: pct(xs, 0.9), P99: pct(xs, 0.99), Max: pct(xs, 1)}
}

func durDist(xs []time.Duration) DurDist {
	if len(xs) == 0 {
		return DurDist{}
	}
	var sum float64
	for _, x := range xs {
		sum += float64(x)
	}
	return DurDist{N: len(xs), Mean: time.Duration(sum / float64(len(xs))),
		P50: pct(xs, 0.5), P90: pct(xs, 0.9), P99: pct(xs, 0.99), Max: pct(xs, 1)}
}

// Write prints the statistics as an aligned text table.
func (s Stats) Write(w io.Writer) {
	d := func(x Dist) string {
		return fmt.Sprintf("mean %.1f  p50 %d  p90 %d  p99 %d  max %d", x.Mean, x.P50, x.P90, x.P99, x.Max)
	}
	r := func(x time.Duration) string {
		switch {
		case x >= time.Second:
			return x.Round(time.Millisecond).String()
		case x >= time.Millisecond:
			return x.Round(time.Microsecond).String()
		}
		return x.String()
	}
	t := func(x DurDist) string {
		if x.N == 0 {
			return "-"
		}
		return fmt.Sprintf("mean %s  p50 %s  p90 %s  p99 %s  max %s  (n=%d)", r(x.Mean), r(x.P50), r(x.P90), r(x.P99), r(x.Max), x.N)
	}
	bt := "mixed"
	if s.BlockTokens > 0 {
		bt = fmt.Sprint(s.BlockTokens)
	}
	large := 0.0
	if s.Append.Max > 0 || s.LargeAppends > 0 {
		large = float64(s.LargeAppends) / float64(max(1, s.Requests-s.Sessions)) * 100
	}
	fmt.Fprintf(w, "requests        %d\n", s.Requests)
	fmt.Fprintf(w, "sessions        %d\n", s.Sessions)
	fmt.Fprintf(w, "turns/session   p50 %d  p90 %d  max %d\n", s.TurnsP50, s.TurnsP90, s.TurnsMax)
	fmt.Fprintf(w, "input tokens    %s\n", d(s.Input))
	fmt.Fprintf(w, "output tokens   %s\n", d(s.Output))
	if s.Requests > s.Sessions {
		fmt.Fprintf(w, "append tokens   %s  (turns>0; >8192: %d = %.1f%%)\n", d(s.Append), s.LargeAppends, large)
	}
	fmt.Fprintf(w, "inter-arrival   %s\n", t(s.InterArrival))
	fmt.Fprintf(w, "turn gap        %s\n", t(s.TurnGap))
	fmt.Fprintf(w, "think           %s\n", t(s.Think))
	fmt.Fprintf(w, "duration        %s\n", r(s.Duration))
	fmt.Fprintf(w, "blocks          %d total, %d unique, %s tokens/block\n", s.TotalBlocks, s.UniqueBlocks, bt)
	fmt.Fprintf(w, "ideal reuse     %.3f\n", s.IdealReuse)
	if s.MisplacedBlocks > 0 {
		fmt.Fprintf(w, "misplaced       %d block hashes seen at another position (not prefix-chained)\n", s.MisplacedBlocks)
	}
}

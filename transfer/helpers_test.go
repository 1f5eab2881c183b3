package transfer_test

import (
	"math"
	"slices"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/transfer"
)

// job is one transfer of a simulated scenario.
type job struct {
	at    time.Duration
	id    uint64
	bytes int64
	cap   float64
}

// event is a scheduled degrade (factor in (0,1]), cut (factor 0) or restore
// (factor -1).
type event struct {
	at     time.Duration
	factor float64
}

// ideal is a config with no setup (1 ns) and 1 byte/ns of bandwidth, so
// fluid-model arithmetic is easy to do by hand.
func ideal() transfer.Config {
	return transfer.Config{
		Name: "ideal", Transport: transfer.RDMA, LineRate: 1e9,
		Efficiency: 1, Setup: time.Nanosecond, MaxRate: math.Inf(1),
	}
}

func newNIC(t tb, cfg transfer.Config) *transfer.NIC {
	t.Helper()
	n, err := transfer.NewNIC(cfg)
	require.NoError(t, err)
	return n
}

// simulate drives a NIC event by event, like an actor would: it starts each
// job at its time and calls Advance at every NextEvent. Completions are
// returned in delivery order. step > 0 additionally calls Advance every
// step of emulated time (results must not depend on it).
func simulate(t tb, cfg transfer.Config, jobs []job, events []event, step time.Duration) []transfer.Completion {
	t.Helper()
	n := newNIC(t, cfg)
	jobs = slices.Clone(jobs)
	slices.SortStableFunc(jobs, func(a, b job) int { return int(a.at - b.at) })
	for _, e := range events {
		switch {
		case e.factor > 0:
			n.Degrade(e.at, e.factor)
		case e.factor == 0:
			n.Cut(e.at)
		default:
			n.Restore(e.at)
		}
	}
	var out []transfer.Completion
	var now time.Duration
	for guard := 0; ; guard++ {
		if guard > 1_000_000 {
			t.Fatal("simulation does not terminate")
		}
		next, ok := n.NextEvent()
		if len(jobs) > 0 && (!ok || jobs[0].at <= next) {
			next, ok = jobs[0].at, true
		}
		if !ok {
			break
		}
		if step > 0 && now+step < next {
			next = now + step
		}
		next = max(next, now)
		out = adv(n, next, out)
		now = next
		for len(jobs) > 0 && jobs[0].at == now {
			n.Start(now, jobs[0].id, jobs[0].bytes, jobs[0].cap)
			jobs = jobs[1:]
		}
	}
	require.Zero(t, n.Active(), "transfers left in flight")
	return out
}

// finishTimes maps id to completion time.
func finishTimes(cs []transfer.Completion) map[uint64]time.Duration {
	m := make(map[uint64]time.Duration, len(cs))
	for _, c := range cs {
		m[c.ID] = c.At
	}
	return m
}

// tb is what the helpers need from *testing.T, *testing.B and *rapid.T.
type tb interface {
	Helper()
	Errorf(format string, args ...any)
	FailNow()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// inRange checks lo <= got <= hi.
func inRange(t tb, got, lo, hi float64, msgAndArgs ...any) bool {
	t.Helper()
	return assert.GreaterOrEqual(t, got, lo, msgAndArgs...) && assert.LessOrEqual(t, got, hi, msgAndArgs...)
}

// adv advances n to at and appends what ended to out.
func adv(n *transfer.NIC, at time.Duration, out []transfer.Completion) []transfer.Completion {
	n.Advance(at)
	return append(out, n.Ready().Out...)
}

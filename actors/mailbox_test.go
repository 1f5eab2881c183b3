package actors

import (
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/pdemu/pdemu/cluster"
)

// TestRingFIFO: the mailbox queue behaves as a FIFO slice under any mix
// of pushes and pops, across segment boundaries.
func TestRingFIFO(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var q ring
		var model []int
		next := 0
		ops := rapid.SliceOfN(rapid.IntRange(-3*segmentLen, 3*segmentLen), 1, 20).Draw(t, "ops")
		for _, op := range ops {
			for ; op > 0; op-- { // push op values
				q.push(next)
				model = append(model, next)
				next++
			}
			for ; op < 0; op++ { // pop -op values
				v := q.pop()
				if len(model) == 0 {
					require.Nil(t, v)
					continue
				}
				require.Equal(t, model[0], v)
				model = model[1:]
			}
		}
		for _, want := range model {
			require.Equal(t, want, q.pop())
		}
		require.Nil(t, q.pop())
	})
}

// TestMailboxNoAllocs: posting to an idle mailbox and draining it (the
// virtual clock's synchronized dispatcher) allocates nothing.
func TestMailboxNoAllocs(t *testing.T) {
	m := newMailbox().(*mailbox)
	n := 0
	m.RegisterHandlers(invokerFunc(func(any) { n++ }), syncDispatcher{})
	var msg any = struct{}{}
	allocs := testing.AllocsPerRun(1000, func() { m.PostUserMessage(msg) })
	require.Zero(t, allocs)
	require.Equal(t, 1001, n)
}

type invokerFunc func(any)

func (f invokerFunc) InvokeSystemMessage(any)  {}
func (f invokerFunc) InvokeUserMessage(m any)  { f(m) }
func (f invokerFunc) EscalateFailure(any, any) {}

type syncDispatcher struct{}

func (syncDispatcher) Schedule(fn func()) { fn() }
func (syncDispatcher) Throughput() int    { return 300 }

// TestFromClock: the nodes' messages are told from protoactor's own (and
// the barrier query), which the shells and the dead-letter watcher must
// not count as handled clock deliveries.
func TestFromClock(t *testing.T) {
	for _, tc := range []struct {
		msg  any
		want bool
	}{
		{cluster.Start{}, true},
		{cluster.NewJob{}, true},
		{cluster.Admit{Admission: &cluster.Admission{}}, true},
		{&cluster.Wake{At: 5}, true},
		{cluster.Finished{D: 3}, true},
		{nil, false},
		{&queryMsg{}, false},
		{&actor.Started{}, false},
		{&actor.Stopping{}, false},
		{&actor.Stopped{}, false},
		{&actor.Restarting{}, false},
		{&actor.Stop{}, false},
		{&actor.Watch{}, false},
		{&actor.Terminated{}, false},
		{&actor.PoisonPill{}, false},
		{&actor.SuspendMailbox{}, false},
		{&actor.ResumeMailbox{}, false},
		{&actor.ReceiveTimeout{}, false},
	} {
		require.Equal(t, tc.want, fromClock(tc.msg), "%T", tc.msg)
	}
}

// TestInlineMailbox: the synchronized dispatcher's mailbox handles a
// message posted to it idle at once, queues one posted while it handles
// (here by the handler itself, as a supervisor's restart may) and drains
// it right after, in post order, allocating nothing; a suspended mailbox
// queues instead of handling.
func TestInlineMailbox(t *testing.T) {
	m := newInlineMailbox().(*mailbox)
	var got []int
	m.RegisterHandlers(invokerFunc(func(v any) {
		i := v.(int)
		got = append(got, i)
		if i%10 == 0 {
			m.PostUserMessage(i + 1) // re-entrant: queued behind i
			m.PostUserMessage(i + 2)
			require.Equal(t, []int{i}, got[len(got)-1:], "handled inside the handler")
		}
	}), syncDispatcher{})
	m.PostUserMessage(10)
	m.PostUserMessage(3)
	require.Equal(t, []int{10, 11, 12, 3}, got)
	require.Zero(t, m.UserMessageCount())

	m.PostSystemMessage(&actor.SuspendMailbox{})
	m.PostUserMessage(4)
	m.PostUserMessage(5)
	require.Equal(t, []int{10, 11, 12, 3}, got, "suspended: queued")
	m.PostSystemMessage(&actor.ResumeMailbox{})
	require.Equal(t, []int{10, 11, 12, 3, 4, 5}, got)

	got = got[:0]
	var msg any = 7
	allocs := testing.AllocsPerRun(1000, func() { m.PostUserMessage(msg) })
	require.Zero(t, allocs)
	require.Len(t, got, 1001)
}

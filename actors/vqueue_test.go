package actors

import (
	"slices"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"pgregory.net/rapid"

	"github.com/pdemu/pdemu/effect"
)

// TestVkeyOrder: vkey.before is effect.Stamp.Before, the order both
// virtual-time runners deliver by.
func TestVkeyOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := effect.Stamp{At: time.Duration(rapid.IntRange(0, 3).Draw(t, "a.at")), From: int32(rapid.IntRange(0, 3).Draw(t, "a.from")), Seq: uint64(rapid.IntRange(0, 3).Draw(t, "a.seq"))}
		b := effect.Stamp{At: time.Duration(rapid.IntRange(0, 3).Draw(t, "b.at")), From: int32(rapid.IntRange(0, 3).Draw(t, "b.from")), Seq: uint64(rapid.IntRange(0, 3).Draw(t, "b.seq"))}
		ka, kb := vkey{at: a.At, from: a.From, seq: a.Seq, slot: 9}, vkey{at: b.At, from: b.From, seq: b.Seq, slot: 1}
		if got, want := ka.before(&kb), a.Before(&b); got != want {
			t.Fatalf("%+v before %+v = %v, Stamp says %v", ka, kb, got, want)
		}
	})
}

// TestVqueueOrder: whatever the mix of zero-delay sends (the lane) and
// delayed ones (the heap), including zero-delay sends at a time other than
// the lane's, the queue hands out every message once, a step per due time,
// in effect.Stamp order: the order of a reference that sorts all of them.
func TestVqueueOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var q vqueue
		type sent struct {
			st  effect.Stamp
			msg int
		}
		var pending []sent
		now := time.Duration(0)
		seqs := map[int32]uint64{}
		msgID := 0
		send := func(t *rapid.T) {
			from := int32(rapid.IntRange(0, 5).Draw(t, "from"))
			d := time.Duration(0)
			if rapid.Bool().Draw(t, "delayed") {
				d = time.Duration(rapid.IntRange(1, 4).Draw(t, "delay"))
			}
			// Now and then a zero-delay send due at another time than the
			// lane's (as a send between runs after the clock moved).
			at := now + d
			if d == 0 && rapid.IntRange(0, 9).Draw(t, "odd") == 0 {
				at = now + time.Duration(rapid.IntRange(1, 3).Draw(t, "oddAt"))
			}
			seqs[from]++
			msgID++
			q.push(at, from, seqs[from], nil, msgID, d == 0)
			pending = append(pending, sent{effect.Stamp{At: at, From: from, Seq: seqs[from]}, msgID})
		}
		for range rapid.IntRange(1, 8).Draw(t, "initial") {
			send(t)
		}
		var batch []vslot
		for steps := 0; q.len() > 0; steps++ {
			if steps > 1000 {
				t.Fatal("too many steps")
			}
			at, ok := q.next()
			if !ok {
				t.Fatal("next: none, len > 0")
			}
			slices.SortFunc(pending, func(a, b sent) int {
				if a.st.Before(&b.st) {
					return -1
				}
				return 1
			})
			if at != pending[0].st.At {
				t.Fatalf("next %v, want %v", at, pending[0].st.At)
			}
			batch = q.take(at, batch[:0])
			n := 0
			for n < len(pending) && pending[n].st.At == at {
				n++
			}
			if len(batch) != n {
				t.Fatalf("step at %v: %d messages, want %d", at, len(batch), n)
			}
			for i, s := range batch {
				if s.msg.(int) != pending[i].msg {
					t.Fatalf("step at %v, message %d: got %v, want %v", at, i, s.msg, pending[i].msg)
				}
			}
			pending = pending[n:]
			now = at
			// Handling the step sends more, now and later.
			if len(pending) < 40 {
				for range rapid.IntRange(0, 3).Draw(t, "sends") {
					send(t)
				}
			}
		}
		if len(pending) != 0 {
			t.Fatalf("%d messages never handed out", len(pending))
		}
	})
}

// TestVqueueReusesSlots: a steady flow of messages reuses the slots of
// the delivered ones (the queue does not grow with the run's length).
func TestVqueueReusesSlots(t *testing.T) {
	var q vqueue
	pid := &actor.PID{}
	var batch []vslot
	for i := range 10_000 {
		q.push(time.Duration(i), 1, uint64(2*i), pid, i, true)
		q.push(time.Duration(i+1), 1, uint64(2*i+1), pid, i, false)
		at, _ := q.next()
		batch = q.take(at, batch[:0])
	}
	if len(q.slots) > 4 {
		t.Fatalf("%d slots for at most 3 pending messages", len(q.slots))
	}
}

package cluster

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The LRU forgets, oldest first, the sessions idle beyond the TTL and
// those beyond the count; a touch makes a session the most recent again.
func TestSessionLRU(t *testing.T) {
	for _, c := range []struct {
		name  string
		ttl   time.Duration
		max   int
		steps []int32 // touched at 0, 1, 2, … seconds
		at    time.Duration
		want  []int32
	}{
		{"none", 0, 0, []int32{1, 2, 3}, time.Hour, nil},
		{"count", 0, 2, []int32{1, 2, 3, 4}, 4 * time.Second, []int32{1, 2}},
		{"count keeps the touched", 0, 2, []int32{1, 2, 1, 3}, 4 * time.Second, []int32{2}},
		{"ttl", 2500 * time.Millisecond, 0, []int32{1, 2, 3, 4}, 5 * time.Second, []int32{1, 2, 3}},
		{"ttl retouched", 2500 * time.Millisecond, 0, []int32{1, 2, 1, 4}, 5 * time.Second, []int32{2, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newSessionLRU(c.ttl, c.max)
			var got []int32
			f := func(s int32) { got = append(got, s) }
			for i, s := range c.steps {
				l.touch(s, time.Duration(i)*time.Second)
				l.expire(time.Duration(i)*time.Second, f)
			}
			l.expire(c.at, f)
			assert.Equal(t, c.want, got)
			assert.LessOrEqual(t, len(l.m), max(len(c.steps), 0))
		})
	}
}

// After a burst of sessions expires, the LRU rebuilds its map and drops
// its free list (the memory follows the sessions known), and goes on
// forgetting in the same order.
func TestSessionLRUShrinks(t *testing.T) {
	l := newSessionLRU(time.Minute, 0)
	var got []int32
	f := func(s int32) { got = append(got, s) }
	const burst = 4 * shrinkMin
	for s := range int32(burst) {
		l.touch(s, 0)
	}
	assert.Equal(t, burst, l.peak)
	l.touch(burst, 30*time.Second)   // kept
	l.touch(burst+1, 40*time.Second) // kept
	l.expire(61*time.Second, f)
	assert.Len(t, got, burst, "the burst forgotten")
	assert.Equal(t, int32(0), got[0])
	assert.Equal(t, int32(burst-1), got[burst-1])
	assert.Len(t, l.m, 2)
	assert.Equal(t, 2, l.peak, "rebuilt at the size held")
	assert.Nil(t, l.free, "free list dropped")
	got = nil
	l.touch(7, 80*time.Second) // a new entry after the rebuild
	l.expire(101*time.Second, f)
	assert.Equal(t, []int32{burst, burst + 1}, got, "oldest first, as before")
	assert.Len(t, l.m, 1)
	assert.Same(t, l.head, l.m[7])
	assert.Same(t, l.tail, l.m[7])
}

// A forgotten session's KV-cause track is dropped: a later request of it
// is a first placement again.
func TestKVCausesForget(t *testing.T) {
	c := kvCauses{sparse: map[int32]*kvTrack{}}
	c.placed(7, 1)
	c.crashed(1, time.Second)
	assert.Equal(t, int32(1), c.track(7).lossD)
	c.forget(7)
	assert.Len(t, c.sparse, 0)
	c.lost(7, 1, 2*time.Second, 1, -1) // its KV evicted later: not revived
	assert.Len(t, c.sparse, 0)
	assert.Equal(t, int32(-1), c.track(7).d)
}

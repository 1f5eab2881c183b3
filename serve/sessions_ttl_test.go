package serve

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// With a TTL the session table forgets keys unused for longer than it
// (pdemu serve: the router's session TTL in wall time), whatever their
// order of creation: a key in use stays, an idle one goes, and a
// forgotten key that comes back starts a new session.
func TestSessionsTTL(t *testing.T) {
	now := time.Unix(0, 0)
	s := newSessions(1<<16, time.Minute)
	s.now = func() time.Time { return now }
	a := s.build("active", "a", 1, 1, nil, 24)
	for i := range 100 {
		s.build(fmt.Sprintf("idle-%d", i), "x", 1, 1, nil, 24)
	}
	// "active" keeps being used every 20 s for 5 minutes; each call ages
	// the queue's head a little (a few entries per call).
	text := "a"
	for range 15 {
		now = now.Add(20 * time.Second)
		text += " more"
		r := s.build("active", text, 1, 1, nil, 24)
		assert.Equal(t, a.Session, r.Session, "a key in use is not forgotten")
	}
	for range 40 {
		now = now.Add(time.Second)
		text += " more"
		s.build("active", text, 1, 1, nil, 24)
	}
	assert.Equal(t, 1, s.count(), "every idle key forgotten")
	assert.EqualValues(t, 100, s.forgotten)
	r := s.build("idle-3", "x", 1, 1, nil, 24)
	assert.Zero(t, r.Turn, "a forgotten key starts afresh")
}

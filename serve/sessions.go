package serve

import (
	"strconv"
	"sync"
	"time"

	"github.com/pdemu/pdemu/workload"
)

// sessions maps session keys to dense session indexes and remembers each
// session's previous turn, so a request gets its Turn and AppendLen the way
// a trace's does. At most max sessions are remembered; the oldest is
// forgotten first (a forgotten session that comes back starts afresh as a
// new session: its prefix may still be cached, its residency is not).
//
// A key is a hint, not a promise: a request continues its key's session
// only if its prompt extends that session's previous prompt, byte for
// byte (checked on the text, whatever its length: a 2-byte "hi" is a
// prefix only of prompts that start with "hi"). Any other prompt under the
// same key (an unrelated question, the same prompt sent again, as
// fixed-body benchmark tools do) starts a new session, turn 0, which the
// key then names: what its KV shares with earlier requests is found by
// the router's and workers' prefix caches (the block hashes), as a real
// server's prefix caching finds it, not promised by the session.
type sessions struct {
	mu     sync.Mutex
	byKey  map[string]*session
	fifo   []string
	head   int
	max    int
	next   int32
	nextID int64
	// ttl > 0 also forgets a session unused for longer than ttl (wall
	// time, now): the queue is then a second-chance one (a session used
	// since it was queued goes to the back), a few entries per call.
	ttl time.Duration
	now func() time.Time
	// forgotten counts the sessions forgotten (by count or by age).
	forgotten int64
}

type session struct {
	idx      int32
	last     time.Time // last use (ttl only)
	turns    int
	prevIn   int
	prevOut  int
	prevLen  int    // bytes of the previous prompt
	prevHash uint64 // hashString of the previous prompt
}

func newSessions(max int, ttl time.Duration) *sessions {
	return &sessions{byKey: map[string]*session{}, max: max, ttl: ttl, now: time.Now}
}

// sessionName is the name of session idx (computed, not kept).
func sessionName(idx int32) string { return "http-" + strconv.Itoa(int(idx)) }

// pop removes the queue's head.
func (t *sessions) pop() {
	t.fifo[t.head] = ""
	t.head++
	if t.head > len(t.fifo)/2 {
		t.fifo = append(t.fifo[:0], t.fifo[t.head:]...)
		t.head = 0
	}
}

// expire forgets, looking at a few entries of the queue's head, the
// sessions unused for longer than the TTL; one used since is queued again.
func (t *sessions) expire(now time.Time) {
	for range 4 {
		if t.head >= len(t.fifo) {
			return
		}
		key := t.fifo[t.head]
		s := t.byKey[key]
		if s != nil && now.Sub(s.last) <= t.ttl {
			if now.Sub(s.last) <= t.ttl/2 {
				// Used recently: to the back (second chance).
				t.pop()
				t.fifo = append(t.fifo, key)
				continue
			}
			return
		}
		t.pop()
		if s != nil {
			delete(t.byKey, key)
			t.forgotten++
		}
	}
}

// build makes the request for one call of session key: its prompt is
// text, of inputLen tokens and the given full blocks; it will generate
// outputLen.
func (t *sessions) build(key, text string, inputLen, outputLen int, blocks []uint64, blockTokens int) *workload.Request {
	t.mu.Lock()
	defer t.mu.Unlock()
	var now time.Time
	if t.ttl > 0 {
		now = t.now()
		t.expire(now)
	}
	s := t.byKey[key]
	if s != nil && !(len(text) > s.prevLen && hashString(text[:s.prevLen]) == s.prevHash) {
		// Not a continuation: a new session under the same key.
		s = &session{idx: t.next}
		t.next++
		t.byKey[key] = s
	}
	if s == nil {
		for len(t.byKey) >= t.max && t.head < len(t.fifo) {
			old := t.fifo[t.head]
			t.pop()
			if _, ok := t.byKey[old]; ok {
				delete(t.byKey, old)
				t.forgotten++
			}
		}
		s = &session{idx: t.next}
		t.next++
		t.byKey[key] = s
		t.fifo = append(t.fifo, key)
	}
	s.last = now
	r := &workload.Request{
		ID:          t.nextID,
		Session:     s.idx,
		SessionName: sessionName(s.idx),
		Turn:        s.turns,
		InputLen:    inputLen,
		OutputLen:   outputLen,
		Blocks:      blocks,
		BlockTokens: blockTokens,
		AppendLen:   inputLen,
	}
	t.nextID++
	if s.turns > 0 {
		// The previous prompt is a prefix of this one.
		if inputLen >= s.prevIn+s.prevOut {
			// The history was re-sent: what is new is what follows the
			// previous prompt and its answer.
			r.AppendLen = max(1, inputLen-s.prevIn-s.prevOut)
		} else {
			// The answer was not sent back in full (replaced, cut or
			// left out): only the previous prompt's KV can be reused.
			r.AppendLen = max(1, inputLen-s.prevIn)
			r.ReuseCap = s.prevIn
		}
	}
	s.turns++
	s.prevIn, s.prevOut = inputLen, outputLen
	s.prevLen, s.prevHash = len(text), hashString(text)
	return r
}

// extra makes a request of its own, turn 0 of a session of its own (not
// remembered under any key), for the second and later sequences of a
// request with n > 1: they share its prompt, so its KV is a prefix-cache
// hit, but they do not continue its session.
func (t *sessions) extra(inputLen, outputLen int, blocks []uint64, blockTokens int) *workload.Request {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := &workload.Request{ID: t.nextID, Session: t.next, SessionName: sessionName(t.next),
		InputLen: inputLen, OutputLen: outputLen, Blocks: blocks, BlockTokens: blockTokens, AppendLen: inputLen}
	t.next++
	t.nextID++
	return r
}

// count is the number of sessions remembered.
func (t *sessions) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byKey)
}

package serve

import (
	"fmt"
	"sync"

	"github.com/pdemu/pdemu/workload"
)

// sessions maps session keys to dense session indexes and remembers each
// session's previous turn, so a request gets its Turn and AppendLen the way
// a trace's does. At most max sessions are remembered; the oldest is
// forgotten first (a forgotten session that comes back starts afresh as a
// new session: its prefix may still be cached, its residency is not).
type sessions struct {
	mu     sync.Mutex
	byKey  map[string]*session
	fifo   []string
	head   int
	max    int
	next   int32
	nextID int64
}

type session struct {
	idx     int32
	name    string
	turns   int
	blocks  []uint64
	prevIn  int
	prevOut int
}

func newSessions(max int) *sessions {
	return &sessions{byKey: map[string]*session{}, max: max}
}

// build makes the request for one call of session key: its prompt has
// inputLen tokens and the given full blocks; it will generate outputLen.
func (t *sessions) build(key string, inputLen, outputLen int, blocks []uint64, blockTokens int) *workload.Request {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byKey[key]
	if s == nil {
		if len(t.byKey) >= t.max {
			old := t.fifo[t.head]
			t.fifo[t.head] = ""
			t.head++
			delete(t.byKey, old)
			if t.head > len(t.fifo)/2 {
				t.fifo = append(t.fifo[:0], t.fifo[t.head:]...)
				t.head = 0
			}
		}
		s = &session{idx: t.next, name: fmt.Sprintf("http-%d", t.next)}
		t.next++
		t.byKey[key] = s
		t.fifo = append(t.fifo, key)
	}
	r := &workload.Request{
		ID:          t.nextID,
		Session:     s.idx,
		SessionName: s.name,
		Turn:        s.turns,
		InputLen:    inputLen,
		OutputLen:   outputLen,
		Blocks:      blocks,
		BlockTokens: blockTokens,
		AppendLen:   inputLen,
	}
	t.nextID++
	if s.turns > 0 {
		common := 0
		for common < len(blocks) && common < len(s.blocks) && blocks[common] == s.blocks[common] {
			common++
		}
		if common == len(s.blocks) && inputLen >= s.prevIn+s.prevOut {
			// The history was re-sent: what is new is what follows the
			// previous prompt and its answer.
			r.AppendLen = max(1, inputLen-s.prevIn-s.prevOut)
		} else {
			r.AppendLen = max(1, inputLen-common*blockTokens)
		}
	}
	s.turns++
	s.blocks, s.prevIn, s.prevOut = blocks, inputLen, outputLen
	return r
}

// count is the number of sessions remembered.
func (t *sessions) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byKey)
}

package workload

import "github.com/pdemu/pdemu/internal/minheap"

// What the synthetic generators (Agentic, SWEBench, Burst) share.

// orDefault sets *v to d when *v is the zero value: a generator config's
// "0 means the default" rule.
func orDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// turnState is a generated session's place in its conversation: the turn
// about to be sent, how many it has, and the request of that turn.
type turnState struct {
	turn    int
	turns   int
	pending *Request
}

func (s *turnState) state() *turnState { return s }

// turnSession is a generator's session type (it embeds turnState).
type turnSession interface{ state() *turnState }

// nextTurn takes the earliest pending request from h (its session at
// the top), numbers it id, and then makes the session's next request with
// make, or drops the session after its last turn.
func nextTurn[S turnSession](h *minheap.Heap[S], id int64, make func(S) *Request) *Request {
	s := *h.Min()
	st := s.state()
	r := st.pending
	r.ID = id
	st.turn++
	if st.turn >= st.turns {
		h.Pop()
	} else {
		st.pending = make(s)
		h.Fix(0)
	}
	return r
}

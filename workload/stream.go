package workload

import "io"

// stream is the state the three streaming trace loaders (Azure, Bailian,
// Mooncake) share in Next: the reorder buffer, whether the input has
// ended, and the error that ended the stream (sticky: every later Next
// returns it again).
type stream[T any] struct {
	q   reorder[T]
	eof bool
	err error
}

func newStream[T any](opts LoadOptions) stream[T] {
	return stream[T]{q: newReorder[T](opts.ReorderWindow)}
}

// next is a streaming loader's Next: it emits the earliest record the
// reorder window releases, else reads another line (read pushes a record,
// skips a bad one or sets eof), until the cap or the end of input. build
// turns a released record into a request; a nil request with a nil error
// means the record was skipped (LoadOptions.SkipBad), an error ends the
// stream.
func (s *stream[T]) next(e *emitter, read func() error, build func(T) (*Request, error)) (*Request, error) {
	if s.err != nil {
		return nil, s.err
	}
	if e.capped() {
		return nil, io.EOF
	}
	for {
		if rec, ok := s.q.pop(s.eof); ok {
			r, err := build(rec)
			if err != nil {
				s.err = err
				return nil, err
			}
			if r == nil {
				continue
			}
			return e.stamp(r), nil
		}
		if s.eof {
			return nil, io.EOF
		}
		if err := read(); err != nil {
			s.err = err
			return nil, err
		}
	}
}

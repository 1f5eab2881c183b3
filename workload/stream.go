package workload

import (
	"cmp"
	"fmt"
	"io"
)

// stream is the state the three streaming trace loaders (Azure, Bailian,
// Mooncake) share: the request emitter, the input's name (for errors), the
// options and block size, the reorder buffer, whether the input has ended,
// and the error that ended the stream (sticky: every later Next returns it
// again).
type stream[T any] struct {
	emitter
	name string
	opts LoadOptions
	bt   int // tokens per block: opts.BlockTokens or the format's default
	q    reorder[T]
	eof  bool
	err  error
}

// newStream checks opts and starts a loader's stream; blockTokens is the
// format's default block size.
func newStream[T any](name string, opts LoadOptions, blockTokens int) (stream[T], error) {
	if err := opts.validate(); err != nil {
		return stream[T]{}, err
	}
	return stream[T]{
		emitter: emitter{max: opts.MaxRequests},
		name:    name, opts: opts, bt: cmp.Or(opts.BlockTokens, blockTokens),
		q: newReorder[T](opts.ReorderWindow),
	}, nil
}

// next is a streaming loader's Next: it emits the earliest record the
// reorder window releases, else reads another line (read pushes a record,
// skips a bad one or sets eof), until the cap or the end of input. build
// turns a released record into a request; a nil request with a nil error
// means the record was skipped (LoadOptions.SkipBad), an error ends the
// stream.
func (s *stream[T]) next(read func() error, build func(T) (*Request, error)) (*Request, error) {
	if s.err != nil {
		return nil, s.err
	}
	if s.capped() {
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
			return s.stamp(r), nil
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

// readLine reads the next line of a JSONL loader's input (Bailian,
// Mooncake); at the end of the input it sets eof and returns ok false and
// a nil error.
func (s *stream[T]) readLine(lr *lineReader) (line []byte, ok bool, err error) {
	line, err = lr.next()
	if err == io.EOF {
		s.eof = true
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("workload: %s: %w", s.name, err)
	}
	return line, true, nil
}

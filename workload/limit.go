package workload

import "io"

type limitedSource struct {
	Source
	left int
}

func (l *limitedSource) Next() (*Request, error) {
	if l.left <= 0 {
		return nil, io.EOF
	}
	l.left--
	return l.Source.Next()
}

// ClientCap passes the cap of the wrapped source through.
func (l *limitedSource) ClientCap() int {
	if c, ok := l.Source.(ClientCapper); ok {
		return c.ClientCap()
	}
	return 0
}

// Limit stops src after n requests (n <= 0: no limit).
func Limit(src Source, n int) Source {
	if n <= 0 {
		return src
	}
	return &limitedSource{Source: src, left: n}
}

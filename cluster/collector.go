package cluster

import (
	"time"

	"github.com/pdemu/pdemu/metrics"
)

// collectorNode records every ended Job and tells when the run is done.
type collectorNode struct {
	outbox
	driver   Addr
	col      *metrics.Collector
	total    int
	gotDone  bool
	progress Progress
}

func (n *collectorNode) Handle(now time.Duration, msg any) Ready {
	switch m := msg.(type) {
	case JobEnded:
		if err := n.col.Add(m.Job); err != nil {
			n.send(RunAddr, Failed{err}, 0)
			return n.ready(0, false)
		}
		n.send(n.driver, RequestEnded{m.Job.Req}, 0)
		// A pointer to a reused value: boxing one Progress per request
		// would allocate, and the runtime reads it before the next call.
		n.progress = Progress{Ended: n.col.Ended(), At: now}
		n.send(RunAddr, &n.progress, 0)
	case SessionForgotten:
		n.col.Forget(m.S)
	case DriverDone:
		n.total, n.gotDone = m.Total, true
	}
	if n.gotDone && n.col.Ended() >= n.total {
		n.send(RunAddr, Done{}, 0)
	}
	return n.ready(0, false)
}

package effect

import "time"

// Stamp is where a message stands in a virtual-time runner's delivery
// order: its due emulated time At, the sending node From and that node's
// own send counter Seq. The order (At, From, Seq) is total, since (From,
// Seq) is unique per send, so the delivery order does not depend on the
// shape of the queue holding the messages. Both virtual-time runners (the
// actors' VirtualClock and cluster/clustertest's in-memory network)
// deliver by it; that they share it, rather than two copies kept in step
// by hand, is what makes their runs deliver in the same order.
type Stamp struct {
	At   time.Duration
	From int32
	Seq  uint64
}

// Before reports whether s is delivered before o.
func (s *Stamp) Before(o *Stamp) bool {
	if s.At != o.At {
		return s.At < o.At
	}
	if s.From != o.From {
		return s.From < o.From
	}
	return s.Seq < o.Seq
}

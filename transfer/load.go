package transfer

import "time"

// Load is what the NIC carries at now (≥ the latest time passed to Start or
// Advance): the bytes its active transfers still have to move (those in
// their fixed phase count whole) and their aggregate rate in bytes/s. It
// changes nothing; links.csv samples it after each event.
func (n *NIC) Load(now time.Duration) (bytesInFlight int64, rate float64) {
	dt := 0.0
	if now > n.t {
		dt = float64(now-n.t) * 1e-9
	}
	var left float64
	for i := range n.xs {
		x := &n.xs[i]
		if !x.pooled {
			left += float64(x.bytes)
			continue
		}
		left += max(x.remaining-x.rate*dt, 0)
		if !n.cut {
			rate += x.rate
		}
	}
	return int64(left + 0.5), rate
}

package cluster

import (
	"time"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/transfer"
)

// linkNode is one NIC of a prefill worker; every link that names the
// device shares its bandwidth.
type linkNode struct {
	outbox
	nic           *transfer.NIC
	bytesPerToken int64
	rateCap       rateCaps // per decode index: the link's own line rate (ratecaps.go)
	decode        []Addr
	inflight      map[uint64]*gpu.Job
	f             *linkFaults           // nil: no faults
	name          string                // links.csv nic
	rec           *metrics.LinkRecorder // nil: not recorded
	recID         metrics.LinkID        // this NIC in rec
	sync          *linkSync             // D→P sync (dpsync.go); nil when off
}

func (n *linkNode) Handle(now time.Duration, msg any) Ready {
	if m, ok := msg.(SyncXfer); ok {
		n.startSync(now, m) // dpsync.go
	}
	if m, ok := msg.(Transfer); ok {
		j := m.Job
		j.TransferBytes = int64(j.Req.InputLen) * n.bytesPerToken
		j.TransferStart = now
		id := uint64(j.Req.ID)
		if n.inflight == nil { // made on first use: most NICs of a big mesh never carry a transfer
			n.inflight = map[uint64]*gpu.Job{}
		}
		n.inflight[id] = j
		n.nic.Start(now, id, j.TransferBytes, n.rateCap.at(j.D))
	}
	n.nic.Advance(now)
	rd := n.nic.Ready()
	for _, c := range rd.Out {
		if n.syncDone(c.ID, c.Err) {
			continue
		}
		j := n.inflight[c.ID]
		delete(n.inflight, c.ID)
		j.TransferEnd = c.At
		if c.Err != nil {
			j.Failed = "link: " + c.Err.Error()
			if n.f != nil {
				n.f.blame(j, c.At)
			}
		}
		n.send(n.decode[j.D], KVReady{j}, 0)
	}
	if n.rec != nil {
		b, r := n.nic.Load(now)
		n.rec.Link(now, n.recID, b, r, n.nic.Active())
	}
	// Wake only while transfers are in flight: a scheduled fault with
	// nothing on the wire changes nothing until the next Start (which
	// applies it), and waking for it would stretch the run past its end.
	return n.ready(rd.Wake, rd.HasWake && len(n.inflight)+n.syncsInFlight() > 0)
}

// linkFaults maps a failed transfer to the cut that failed it.
type linkFaults struct {
	cuts []FaultEvent // this NIC's cuts, in time order
}

func (f *linkFaults) blame(j *gpu.Job, at time.Duration) {
	for i := len(f.cuts) - 1; i >= 0; i-- {
		if f.cuts[i].At <= at {
			j.FaultHit = int32(f.cuts[i].ID + 1)
			return
		}
	}
}

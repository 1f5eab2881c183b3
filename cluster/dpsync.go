package cluster

import (
	"time"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/policy"
)

// D→P incremental KV sync (router "kvc" { dp_sync = true }, spec §9 Q4),
// kept in this file as a separate addition to the nodes: when a Direct
// request of a session ends on decode worker d, d streams the KV it added
// (the request's append-prefill and its output) back to the prefill worker
// that holds the session's backup, over the link between them: the transfer
// shares that link's NIC with the P→D transfers (processor sharing, both
// directions on one NIC). When it lands, the prefill worker's backup of the
// session advances to the request's prompt (gpu.PrefillWorker.SyncBackup),
// so a later Reseed re-prefills only what was not synced yet.
//
// Message path (Protocol): decode → prefill (SyncReq) → link (SyncXfer) →
// prefill (SyncDone). A sync lost to a link fault is dropped (the backup
// stays behind). Sync messages carry no Job: the request they name has
// already ended.

// Sync describes one D→P sync: the session's prompt blocks up to the
// request that ended, and the KV tokens to move.
type Sync struct {
	Session     int32
	Blocks      []uint64 // the ended request's prompt blocks (read only)
	BlockTokens int
	Tokens      int // KV tokens to move
	D           int // decode index the KV comes from
}

type (
	// SyncReq asks the prefill worker holding a session's backup to
	// receive a Direct turn's new KV.
	SyncReq struct{ Sync Sync }
	// SyncXfer hands a sync to the link between the prefill worker and
	// decode worker Sync.D.
	SyncXfer struct{ Sync Sync }
	// SyncDone tells the prefill worker that a sync's KV landed.
	SyncDone struct{ Sync Sync }
)

// syncIDBase keeps sync transfer ids apart from request ids on a NIC.
const syncIDBase = uint64(1) << 62

// dpSync is the decode node's side: which prefill worker holds each
// session's backup, learnt from the Seeds and Reseeds it receives.
type dpSync struct {
	prefill []Addr
	backup  map[int32]int
}

// arrived notes the backup holder of a seeded or reseeded job (call it
// before handing the job to the worker).
func (s *dpSync) arrived(j *gpu.Job) {
	if s == nil || j.P < 0 {
		return
	}
	if j.Mode == policy.ModeSeed || j.Mode == policy.ModeReseed {
		s.backup[j.Req.Session] = j.P
	}
}

// ended sends the sync of a Direct job that completed on decode worker d
// (call it before handing the ended job to the collector).
func (s *dpSync) ended(o *outbox, j *gpu.Job, d int) {
	if s == nil || j.Mode != policy.ModeDirect || j.Failed != "" {
		return
	}
	r := j.Req
	p, ok := s.backup[r.Session]
	if !ok {
		return
	}
	if r.Last {
		delete(s.backup, r.Session)
		return
	}
	o.send(s.prefill[p], SyncReq{Sync{Session: r.Session, Blocks: r.Blocks, BlockTokens: r.BlockTokens,
		Tokens: j.PrefillTokens + r.OutputLen, D: d}}, 0)
}

// handleSync is the prefill node's side; it reports whether msg was a sync
// message.
func (n *prefillNode) handleSync(msg any) bool {
	switch m := msg.(type) {
	case SyncReq:
		// Build checks that every prefill worker has a link to every
		// decode worker.
		n.send(n.links[m.Sync.D], SyncXfer(m), 0)
	case SyncDone:
		n.w.SyncBackup(m.Sync.Session, m.Sync.Blocks, m.Sync.BlockTokens)
	default:
		return false
	}
	return true
}

// linkSync is the link node's sync state.
type linkSync struct {
	prefill Addr
	next    uint64
	flying  map[uint64]Sync
}

// startSync puts a sync on the wire.
func (n *linkNode) startSync(now time.Duration, m SyncXfer) {
	s := n.sync
	s.next++
	id := syncIDBase + s.next
	s.flying[id] = m.Sync
	n.nic.Start(now, id, int64(m.Sync.Tokens)*n.bytesPerToken, n.rateCap.at(m.Sync.D))
}

// syncDone handles a completion if it is a sync's; it reports whether it
// was.
func (n *linkNode) syncDone(id uint64, err error) bool {
	if n.sync == nil {
		return false
	}
	m, ok := n.sync.flying[id]
	if !ok {
		return false
	}
	delete(n.sync.flying, id)
	if err == nil {
		n.send(n.sync.prefill, SyncDone{m}, 0)
	}
	return true
}

func (n *linkNode) syncsInFlight() int {
	if n.sync == nil {
		return 0
	}
	return len(n.sync.flying)
}

// wireSync turns D→P sync on for a disaggregated cluster's nodes.
func wireSync(decs []*decodeNode, pres []Addr, links []*linkNode, linkPrefill []int) {
	for _, d := range decs {
		d.sync = &dpSync{prefill: pres, backup: map[int32]int{}}
	}
	for i, l := range links {
		l.sync = &linkSync{prefill: pres[linkPrefill[i]], flying: map[uint64]Sync{}}
	}
}

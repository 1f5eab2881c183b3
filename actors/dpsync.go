package actors

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/policy"
)

// D→P incremental KV sync (router "kvc" { dp_sync = true }, spec §9 Q4),
// kept in this file as a separate addition to the actors: when a Direct
// request of a session ends on decode worker d, d streams the KV it added
// (the request's append-prefill and its output) back to the prefill worker
// that holds the session's backup, over the link between them: the transfer
// shares that link's NIC with the P→D transfers (processor sharing, both
// directions on one NIC). When it lands, the prefill worker's backup of the
// session advances to the request's prompt (gpu.PrefillWorker.SyncBackup),
// so a later Reseed re-prefills only what was not synced yet.
//
// Message path: decode actor → prefill actor (syncReqMsg) → link actor
// (syncXferMsg) → prefill actor (syncDoneMsg). A sync lost to a link fault
// is dropped (the backup stays behind).

type (
	syncReqMsg struct {
		session     int32
		blocks      []uint64
		blockTokens int
		tokens      int // KV tokens to move
		d           int
	}
	syncXferMsg struct{ req syncReqMsg }
	syncDoneMsg struct{ req syncReqMsg }
)

// syncIDBase keeps sync transfer ids apart from request ids on a NIC.
const syncIDBase = uint64(1) << 62

// dpSync is the decode actor's side: which prefill worker holds each
// session's backup, learnt from the Seeds and Reseeds it receives.
type dpSync struct {
	prefill []*actor.PID
	backup  map[int32]int
}

// arrived notes the backup holder of a seeded or reseeded job.
func (s *dpSync) arrived(j *gpu.Job) {
	if s == nil || j.P < 0 {
		return
	}
	if j.Mode == policy.ModeSeed || j.Mode == policy.ModeReseed {
		s.backup[j.Req.Session] = j.P
	}
}

// ended sends the sync of a Direct job that completed on decode worker d.
func (s *dpSync) ended(n *node, j *gpu.Job, d int) {
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
	n.send(s.prefill[p], syncReqMsg{session: r.Session, blocks: r.Blocks, blockTokens: r.BlockTokens,
		tokens: j.PrefillTokens + r.OutputLen, d: d}, 0)
}

// handleSync is the prefill and link actors' side; it reports whether msg
// was a sync message.
func (a *prefillActor) handleSync(msg any) bool {
	switch m := msg.(type) {
	case syncReqMsg:
		if l := a.links[m.d]; l != nil {
			a.send(l, syncXferMsg{m}, 0)
		}
	case syncDoneMsg:
		a.w.SyncBackup(m.req.session, m.req.blocks, m.req.blockTokens)
	default:
		return false
	}
	return true
}

// linkSync is the link actor's sync state.
type linkSync struct {
	prefill *actor.PID
	next    uint64
	flying  map[uint64]syncReqMsg
}

func (a *linkActor) startSync(m syncXferMsg) {
	s := a.sync
	s.next++
	id := syncIDBase + s.next
	s.flying[id] = m.req
	a.nic.Start(a.now(), id, int64(m.req.tokens)*a.bytesPerToken, a.rateCap[m.req.d])
}

// syncDone handles a completion if it is a sync's; it reports whether it was.
func (a *linkActor) syncDone(id uint64, err error) bool {
	if a.sync == nil {
		return false
	}
	m, ok := a.sync.flying[id]
	if !ok {
		return false
	}
	delete(a.sync.flying, id)
	if err == nil {
		a.send(a.sync.prefill, syncDoneMsg{m}, 0)
	}
	return true
}

func (a *linkActor) syncsInFlight() int {
	if a.sync == nil {
		return 0
	}
	return len(a.sync.flying)
}

package fleetserve

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"time"

	"github.com/pdemu/pdemu/fleet"
	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/serve"
	"github.com/pdemu/pdemu/workload"
)

func (s *fleetServer) publishStates() {
	for _, wi := range s.f.Workers() {
		if wi.State == fleet.StateGone {
			continue
		}
		s.br.SetWorker(serve.WorkerState{Name: wi.Name, Role: string(wi.Role), Running: wi.Running, Waiting: wi.Waiting,
			KVUsed: wi.KVUsed, KVCap: wi.KVCap})
	}
	for _, l := range s.f.Links() {
		s.br.SetLink(serve.LinkState{Name: l.Name, Bytes: l.Bytes, Utilisation: min(1, float64(l.Active))})
	}
}

func (s *fleetServer) sampleLinks(now time.Duration) {
	for _, l := range s.f.Links() {
		id, seen := s.linkSeen[l.Name]
		if !seen {
			if l.Active == 0 {
				continue // idle so far: no row
			}
			id = s.links.NIC(l.Name, l.LineRate)
			s.linkSeen[l.Name] = id
		}
		s.links.Link(now, id, l.InFlight, l.Rate, l.Active)
	}
}

// listing is the current listing (s.mu held).
func (s *fleetServer) listing() Listing {
	l := Listing{Model: s.opts.Model, Admin: s.adminURL, Workers: []Endpoint{}, Emulated: s.emulated().Seconds()}
	for _, wi := range s.f.Workers() {
		ep := s.eps[wi.Name]
		if ep == nil || wi.State == fleet.StateGone {
			continue
		}
		l.Workers = append(l.Workers, Endpoint{Worker: wi.Name, Role: string(wi.Role), URL: ep.url, KVEvents: ep.pub.Endpoint(),
			KVTopic: ep.topic, EngineID: wi.Name, State: string(wi.State), GPU: wi.Spec.GPU, Model: wi.Spec.Model})
	}
	return l
}

func (s *fleetServer) writeListing() {
	if s.opts.EndpointsFile == "" {
		return
	}
	b, _ := json.MarshalIndent(s.listing(), "", "  ")
	tmp := s.opts.EndpointsFile + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		s.log.Warn("endpoints file", "error", err)
		return
	}
	if err := os.Rename(tmp, s.opts.EndpointsFile); err != nil {
		s.log.Warn("endpoints file", "error", err)
	}
}

// workerCluster is one worker's serve.Cluster.
type workerCluster struct {
	s    *fleetServer
	name string
}

var errStarting = errors.New("the worker is starting (loading its weights)")

func (c *workerCluster) Submit(ctx context.Context, r *workload.Request) (<-chan serve.Event, error) {
	s := c.s
	tk, _ := ctx.Value(ticketKey{}).(*ticket)
	if tk == nil {
		tk = &ticket{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.emulated()
	s.f.Advance(now)
	s.dispatch(now)
	wi, ok := s.f.Worker(c.name)
	switch {
	case !ok || wi.State == fleet.StateGone:
		return nil, fleet.ErrGone
	case wi.State == fleet.StateStarting:
		return nil, errStarting
	case wi.State == fleet.StateDraining || s.closing:
		return nil, fleet.ErrDraining
	}
	// One fleet-wide session index per (worker, session): each worker's
	// server numbers its own sessions.
	key := c.name + "/" + r.SessionName
	sid, seen := s.sessions[key]
	if !seen {
		sid = int32(len(s.sessions))
		s.sessions[key] = sid
	}
	r.Session, r.SessionName = sid, key
	events, err := s.br.Submit(ctx, r)
	if err != nil {
		return nil, err
	}
	if got, ok, _ := s.br.Take(); !ok || got != r {
		// Every Submit goes through s.mu, so the Bridge's queue holds
		// exactly this request; anything else is a bug worth shouting.
		s.log.Error("the bridge's queue is out of step", "want", r.ID, "got", got)
	}
	tk.mu.Lock()
	call := fleet.Call{Worker: c.name, Req: r, RemoteDecode: tk.remoteDecode, Pull: tk.pull}
	tk.mu.Unlock()
	s.tickets[r.ID] = tk
	s.reqs[r.ID] = r
	if err := s.f.Submit(now, call); err != nil {
		// The stream exists: end it as failed (nothing is lost).
		delete(s.tickets, r.ID)
		s.br.Ended(serve.End{ID: r.ID, Worker: c.name, Arrival: now, Done: now, Failed: err.Error(), Now: now})
		s.jobs = append(s.jobs, &gpu.Job{Req: r, P: -1, D: -1, Arrival: now, Done: now, Failed: err.Error()})
		s.admitted++
		s.ended++
		return events, nil
	}
	s.admitted++
	s.dispatch(now)
	s.kick()
	return events, nil
}

// Late, Served, Client and TimeScale tell the fleet's Bridge what the
// worker's clients saw, as a cluster endpoint's relays tell theirs
// (pdemu_served_late_seconds, summary.json served, per_request.csv's
// client columns).
func (c *workerCluster) Late(at time.Duration) time.Duration    { return c.s.br.Late(at) }
func (c *workerCluster) Served(first, end time.Duration)        { c.s.br.Served(first, end) }
func (c *workerCluster) Client(id int64, t metrics.ClientTimes) { c.s.br.Client(id, t) }
func (c *workerCluster) TimeScale() float64                     { return c.s.br.TimeScale() }

func (c *workerCluster) Snapshot() serve.Snapshot {
	all := c.s.br.Snapshot()
	out := serve.Snapshot{Emulated: all.Emulated, Lag: all.Lag}
	for _, w := range all.Workers {
		if w.Name == c.name {
			out.Workers = append(out.Workers, w)
		}
	}
	prefix := c.name + "/"
	for _, l := range all.Links {
		if len(l.Name) > len(prefix) && l.Name[:len(prefix)] == prefix {
			out.Links = append(out.Links, l)
		}
	}
	return out
}

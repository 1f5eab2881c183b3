package fleetserve

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/fleet"
	"github.com/pdemu/pdemu/kvevents"
	"github.com/pdemu/pdemu/serve"
)

func (s *fleetServer) port(next *int, r PortRange) (int, error) {
	if r.First == 0 && r.Last == 0 {
		return 0, nil
	}
	if *next > r.Last {
		return 0, fmt.Errorf("fleet: the port range %d-%d is used up", r.First, r.Last)
	}
	p := *next
	*next++
	return p, nil
}

// open starts worker wi's endpoint and KV publisher (s.mu held or not
// yet shared).
func (s *fleetServer) open(wi fleet.WorkerInfo) error {
	hp, err := s.port(&s.nextPort, s.opts.Ports)
	if err != nil {
		return err
	}
	kp, err := s.port(&s.nextKV, s.opts.KVPorts)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(s.host, fmt.Sprint(hp)))
	if err != nil {
		return fmt.Errorf("worker %s: %w", wi.Name, err)
	}
	topic := fmt.Sprintf("kv@%s@%s", wi.Name, s.opts.Model)
	pub, err := kvevents.Listen(fmt.Sprintf("tcp://%s", net.JoinHostPort(s.host, fmt.Sprint(kp))), topic)
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("worker %s: %w", wi.Name, err)
	}
	if p, err := cluster.PerfFor(wi.Spec); err == nil {
		s.perfs.Store(wi.Name, p)
	}
	ep := &endpoint{name: wi.Name, role: wi.Role, ln: ln, url: "http://" + ln.Addr().String(), pub: pub, topic: topic,
		state: wi.State, gone: make(chan struct{})}
	so := s.serveOpts
	so.Listen = ln.Addr().String()
	srv, err := serve.New(so, &workerCluster{s: s, name: wi.Name})
	if err != nil {
		_ = ln.Close()
		_ = pub.Close(time.Second)
		return err
	}
	ep.srv = srv
	ep.httpSrv = &http.Server{
		Handler:           &front{s: s, ep: ep, next: srv.Handler()},
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       s.log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	s.eps[wi.Name] = ep
	s.order = append(s.order, wi.Name)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(ep.gone)
		_ = ep.httpSrv.Serve(ln)
	}()
	return nil
}

// closeAll stops every endpoint still open.
func (s *fleetServer) closeAll() {
	s.mu.Lock()
	eps := make([]*endpoint, 0, len(s.eps))
	for _, ep := range s.eps {
		eps = append(eps, ep)
	}
	s.mu.Unlock()
	for _, ep := range eps {
		s.closeEndpoint(ep)
	}
}

func (s *fleetServer) closeEndpoint(ep *endpoint) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = ep.httpSrv.Shutdown(ctx)
	// Close writes what is queued; a batch it gives up on counts as
	// failed, so the totals are read after it.
	_ = ep.pub.Close(2 * time.Second)
	sent, dropped, failed := ep.pub.Stats()
	s.mu.Lock()
	if s.eps[ep.name] == ep {
		delete(s.eps, ep.name)
		s.kvTotals[0] += sent
		s.kvTotals[1] += dropped
		s.kvTotals[2] += failed
	}
	s.mu.Unlock()
}

// loop drives the fleet on the wall clock.
func (s *fleetServer) loop(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.mu.Lock()
		now := s.emulated()
		s.f.Advance(now)
		s.dispatch(now)
		next, ok := s.f.NextEvent()
		s.mu.Unlock()
		wait := time.Hour
		if ok {
			wait = max(time.Duration(float64(next-now)/s.scale), 0) + 50*time.Microsecond
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			s.mu.Lock()
			s.f.Advance(s.emulated())
			s.dispatch(s.f.Now())
			s.mu.Unlock()
			return
		case <-s.wake:
		case <-timer.C:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

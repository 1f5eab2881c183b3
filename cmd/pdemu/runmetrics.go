package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/pdemu/pdemu/serve"
	"github.com/pdemu/pdemu/topology"
)

// metricsServer serves a wall-clock run's live /metrics (run
// --metrics-listen). It listens before the run starts (a bad or busy
// address fails the command before any emulation) and stops after the
// run's outputs are written and --metrics-linger has passed (or the
// command's context is done), so that a scraper gets the final values.
type metricsServer struct {
	m   *serve.RunMetrics
	srv *http.Server
	l   net.Listener
}

// checkMetricsFlags refuses --metrics-listen on the virtual clock and a
// non-loopback address without --allow-remote (usage errors, exit 2).
func checkMetricsFlags(f *runFlags, spec *topology.Spec) error {
	if f.metricsListen == "" {
		if f.allowRemote {
			return usageErr("--allow-remote needs --metrics-listen")
		}
		return nil
	}
	if spec.Workload.Clock != topology.ClockWall {
		return usageErr("--metrics-listen needs the wall clock (--clock wall); a virtual-clock run has no real time to scrape in")
	}
	if f.metricsLinger < 0 {
		return usageErr("--metrics-linger must be >= 0, got %v", f.metricsLinger)
	}
	if err := serve.CheckListen(f.metricsListen, f.allowRemote); err != nil {
		return usageErr("--metrics-listen: %v", err)
	}
	return nil
}

func startMetrics(addr string, spec *topology.Spec, stderr io.Writer) (*metricsServer, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen: %w", err)
	}
	m := serve.NewRunMetrics(spec)
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	s := &metricsServer{m: m, l: l, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = s.srv.Serve(l) }()
	fmt.Fprintf(stderr, "pdemu: live metrics on http://%s/metrics\n", l.Addr())
	return s, nil
}

// stop keeps serving for linger (or until ctx is done), then shuts down.
func (s *metricsServer) stop(ctx context.Context, linger time.Duration) {
	if linger > 0 {
		t := time.NewTimer(linger)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(sctx)
}

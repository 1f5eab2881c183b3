package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/pdemu/pdemu/fleet"
	"github.com/pdemu/pdemu/fleetserve"
	"github.com/pdemu/pdemu/output"
	"github.com/pdemu/pdemu/topology"
)

// fleetFlags are pdemu serve's --endpoints workers flags.
type fleetFlags struct {
	endpoints        string
	endpointsFile    string
	workerPorts      string
	kvPorts          string
	holdTimeout      time.Duration
	startupDelay     time.Duration
	weightsBandwidth string
}

func (f *fleetFlags) register(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&f.endpoints, "endpoints", "cluster", "cluster: one endpoint for the whole cluster behind its router; workers: one vLLM-like endpoint per worker, router bypassed (docs/SERVE.md)")
	fl.StringVar(&f.endpointsFile, "endpoints-file", "", "--endpoints workers: write the listing (JSON: worker, role, url, kv_events, ...) here, rewritten on every change")
	fl.StringVar(&f.workerPorts, "worker-ports", "", "--endpoints workers: the workers' HTTP ports, FIRST-LAST (default: the ports after --listen's; 0 with --listen :0)")
	fl.StringVar(&f.kvPorts, "kv-events-ports", "", "--endpoints workers: the workers' ZMQ KV-events ports, FIRST-LAST (default 5557-5656, vLLM's 5557 first; free ports with --listen :0)")
	fl.DurationVar(&f.holdTimeout, "hold-timeout", fleet.DefaultHoldTimeout, "--endpoints workers: how long (emulated) a prefill worker keeps a hand-off's KV for its decode worker (vLLM's VLLM_NIXL_ABORT_REQUEST_TIMEOUT)")
	fl.DurationVar(&f.startupDelay, "startup-delay", 0, "--endpoints workers: emulated start-up time of a worker added through the admin API, before its weights load")
	fl.StringVar(&f.weightsBandwidth, "weights-bandwidth", "0", "--endpoints workers: storage bandwidth an added worker loads its weights at (\"2GB/s\"; 0: no load time; docs/MODEL.md)")
}

func (f *fleetFlags) workers() bool { return f.endpoints == "workers" }

func (f *fleetFlags) check() error {
	if f.endpoints != "cluster" && f.endpoints != "workers" {
		return usageErr("--endpoints %q: want cluster or workers", f.endpoints)
	}
	return nil
}

func parsePorts(flag, s string) (fleetserve.PortRange, error) {
	if s == "" {
		return fleetserve.PortRange{}, nil
	}
	a, b, found := strings.Cut(s, "-")
	first, err1 := strconv.Atoi(strings.TrimSpace(a))
	last := first + 999
	var err2 error
	if found {
		last, err2 = strconv.Atoi(strings.TrimSpace(b))
	}
	if err1 != nil || err2 != nil || first < 1 || last < first || last > 65535 {
		return fleetserve.PortRange{}, usageErr("%s %q: want FIRST-LAST, 1 <= FIRST <= LAST <= 65535", flag, s)
	}
	return fleetserve.PortRange{First: first, Last: last}, nil
}

func cmdServeFleet(cmd *cobra.Command, f *serveFlags, log hclog.Logger, spec *topology.Spec) error {
	stderr := cmd.ErrOrStderr()
	ff := &f.fleet
	o := fleetserve.Options{Admin: f.listen, AllowRemote: f.allowRemote, TimeScale: f.timeScale, Model: f.model,
		MaxInFlight: f.maxInFlight, HoldTimeout: ff.holdTimeout, StartupFixed: ff.startupDelay,
		EndpointsFile: ff.endpointsFile, Logger: log}
	var err error
	if o.Ports, err = parsePorts("--worker-ports", ff.workerPorts); err != nil {
		return err
	}
	if o.KVPorts, err = parsePorts("--kv-events-ports", ff.kvPorts); err != nil {
		return err
	}
	if _, port, ok := strings.Cut(f.listen, ":"); ok && port != "0" && o.Ports == (fleetserve.PortRange{}) {
		if p, err := strconv.Atoi(port); err == nil && p > 0 && p < 65535 {
			o.Ports = fleetserve.PortRange{First: p + 1, Last: min(p+1000, 65535)}
		}
		if o.KVPorts == (fleetserve.PortRange{}) {
			o.KVPorts = fleetserve.PortRange{First: 5557, Last: 5656}
		}
	}
	if n := len(spec.Prefill) + len(spec.Decode) + len(spec.Fused); n > 0 {
		for _, pr := range []struct {
			flag string
			r    fleetserve.PortRange
		}{{"--worker-ports", o.Ports}, {"--kv-events-ports", o.KVPorts}} {
			if pr.r != (fleetserve.PortRange{}) && pr.r.Last-pr.r.First+1 < n {
				return usageErr("%s %d-%d: %d ports for the scenario's %d workers", pr.flag, pr.r.First, pr.r.Last, pr.r.Last-pr.r.First+1, n)
			}
		}
	}
	if ff.weightsBandwidth != "0" && ff.weightsBandwidth != "" {
		bw, err := topology.ParseBandwidth(ff.weightsBandwidth)
		if err != nil || bw <= 0 {
			return usageErr("--weights-bandwidth %q: want a bandwidth such as 2GB/s (%v)", ff.weightsBandwidth, err)
		}
		o.WeightsBandwidth = bw
	}
	if ff.holdTimeout <= 0 {
		return usageErr("--hold-timeout must be > 0, got %v", ff.holdTimeout)
	}
	o.Ready = func(l fleetserve.Listing) {
		fmt.Fprintf(stderr, "pdemu: serving %s as %d worker endpoints (router bypassed); admin API %s/admin/workers — Ctrl-C drains and writes %s\n",
			spec.Source, len(l.Workers), l.Admin, f.out)
		for _, w := range l.Workers {
			fmt.Fprintf(stderr, "  %-8s %-7s %s/v1  kv events %s topic %s\n", w.Worker, w.Role, w.URL, w.KVEvents, w.KVTopic)
		}
		if ff.endpointsFile != "" {
			fmt.Fprintf(stderr, "  listing in %s\n", ff.endpointsFile)
		}
	}
	stopIsNormal.Store(true)
	enterCancellable()
	res, runErr := fleetserve.Run(cmd.Context(), spec, o)
	if res == nil {
		return runErr
	}
	rr, err := res.RunResult(spec)
	if err != nil {
		return errors.Join(runErr, err)
	}
	if err := res.Write(f.out, rr, output.WriteOptions{Force: f.force}); err != nil {
		return errors.Join(runErr, err)
	}
	s := rr.Summary
	fmt.Fprintf(stderr, "pdemu: served %d requests over the worker endpoints (%d failed) in %s; %d KV event batches published (%d dropped); outputs in %s\n",
		s.Requests.Total, s.Requests.Failed, res.Wall.Round(time.Millisecond), res.KVSent, res.KVDropped, f.out)
	output.PrintWarnings(stderr, s)
	if res.Partial {
		return &exitError{output.ExitFailure, runErr}
	}
	if runErr != nil {
		return runErr
	}
	// As serve's cluster mode: too many failed requests is exit 3.
	return tooManyFailed(s, f.maxFailed)
}

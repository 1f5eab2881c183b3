package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/output"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/serve"
	"github.com/pdemu/pdemu/served"
)

// stopIsNormal is set by serve: a SIGINT/SIGTERM is how a server is
// stopped, so after a complete drain main exits 0 instead of 130/143.
var stopIsNormal atomic.Bool

// onSecondSignal, set by serve, is what main calls on a second signal
// (with its stop_by name): stop waiting for the drain.
var onSecondSignal atomic.Value

type serveFlags struct {
	scenarioFlags
	listen      string
	allowRemote bool
	timeScale   float64
	model       string
	maxInFlight int
	out         string
	force       bool
	logLevel    string
	maxFailed   float64
	bodyTimeout time.Duration
	fleet       fleetFlags      // --endpoints workers (cmd_serve_fleet.go)
	groups      serveGroupFlags // --group, --emit k8s (cmd_servegroup.go)
}

func newServeCmd() *cobra.Command {
	f := &serveFlags{}
	c := &cobra.Command{
		Use:   "serve [SCENARIO]",
		Short: "Serve the scenario's cluster behind an OpenAI-compatible API, on the wall clock",
		Long: `Run SCENARIO's cluster (an HCL file or an embedded scenario; default
` + scenarios.Default + `) on the wall clock, taking its requests from HTTP instead of
its workload block:

  POST /v1/chat/completions, POST /v1/completions (streaming or not)
  POST /tokenize, /detokenize; GET /v1/models[/{id}], /health[/ready]
  GET  /metrics (Prometheus; every family of vLLM's reference dashboard)

It runs through the same runtime as run: the scenario's faults fire (a
request a crash lost is retried by the router, or ends in 503 with
Retry-After); a client that disconnects has its request aborted. Every
request parameter is applied, a documented no-op, or refused with 400
naming it (docs/SERVE.md, Conformance); /v1/models reports the context
the cluster admits.

Each prompt is cut into 24-token blocks hashed as a chain, so a
conversation re-sent with its history reuses its KV exactly as a trace
does; the session comes from the X-Session-Id header, else the "user"
field, else the conversation's opening, and holds only while each prompt
extends the previous one. Tokens stream at the emulated decode's pace
(scaled by --time-scale).

The server binds to loopback unless --allow-remote. SIGINT/SIGTERM drain:
/health and new requests get 503 with Retry-After, requests in flight end
normally; then the run's outputs are written to --out. A second signal
stops waiting (outputs marked partial, exit 130/143).

` + exitCodesHelp,
		Example: `  pdemu serve
  pdemu serve vanilla-pd-1p3d --listen 127.0.0.1:9000
  pdemu serve --time-scale 10 --set router.tau_append=4096 --out served
  pdemu serve --listen 127.0.0.1:8001 --out served --force   # then: OPENAI_BASE_URL=http://127.0.0.1:8001/v1 my-agent
  pdemu serve 1p3d-mlx5 --endpoints workers --endpoints-file fleet.json   # one vLLM-like endpoint per worker`,
		Args:              atMostOne("serve", "SCENARIO"),
		ValidArgsFunction: completeScenarios,
		RunE:              withOptionalArg(func(cmd *cobra.Command, file string) error { return cmdServe(cmd, f, file) }),
	}
	fl := c.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:8000", "address to listen on (loopback unless --allow-remote)")
	fl.BoolVar(&f.allowRemote, "allow-remote", false, "allow a non-loopback --listen address")
	fl.Float64Var(&f.timeScale, "time-scale", 0, "emulated time runs this many times faster than real time (0: the scenario's, or 1)")
	fl.StringVar(&f.model, "model", "pdemu", "the model name served (requests naming another get 404)")
	fl.IntVar(&f.maxInFlight, "max-in-flight", 4096, "admission limit: beyond it requests get 429 with Retry-After")
	fl.StringVar(&f.out, "out", "pdemu-serve-out", "where the run's outputs are written when the server stops")
	fl.BoolVar(&f.force, "force", false, "replace the outputs of an earlier run in --out")
	fl.StringVar(&f.logLevel, "log-level", "warn", "trace | debug | info | warn | error")
	fl.DurationVar(&f.bodyTimeout, "body-timeout", 10*time.Second, "a request body must arrive within this (else 408); bodies are read before admission, so slow ones hold no --max-in-flight slot")
	fl.Float64Var(&f.maxFailed, "max-failed", output.DefaultMaxFailed, "exit 3 when more than this share of the requests served failed (negative: no limit; aborted requests are not failures)")
	f.scenarioFlags.register(c, "override an HCL attribute: --set PATH=VALUE (repeatable)")
	f.fleet.register(c)
	f.groups.register(c)
	return c
}

func cmdServe(cmd *cobra.Command, f *serveFlags, file string) error {
	stderr := cmd.ErrOrStderr()
	if f.timeScale < 0 {
		return usageErr("--time-scale must be > 0, got %g", f.timeScale)
	}
	if err := serve.CheckListen(f.listen, f.allowRemote); err != nil {
		// As run's --metrics-listen: bad input (2), naming the flag.
		return usageErr("--listen %s: not a loopback address; pass --allow-remote to serve beyond this machine (anyone who can reach it can use it)", f.listen)
	}
	if f.bodyTimeout <= 0 {
		return usageErr("--body-timeout must be > 0, got %v", f.bodyTimeout)
	}
	if f.maxInFlight <= 0 {
		return usageErr("--max-in-flight must be > 0, got %d", f.maxInFlight)
	}
	if err := f.fleet.check(); err != nil {
		return err
	}
	group, err := parseGroup(f.groups.group)
	if err != nil {
		return err
	}
	emit := f.groups.emit != ""
	log, spec, err := f.loadForRun(file, f.logLevel, stderr, f.out, f.force || emit)
	if err != nil {
		return err
	}
	if emit {
		return emitServe(cmd, f, file, spec)
	}
	if spec, err = groupSpec(spec, group); err != nil {
		return err
	}
	if f.fleet.workers() {
		// One endpoint per worker of the scenario, or of group I of N.
		err := cmdServeFleet(cmd, f, log, spec)
		if _, serr := os.Stat(filepath.Join(f.out, output.Marker)); group != nil && serr == nil {
			err = errors.Join(err, writeGroupParams(f.out, file, f, spec, group))
		}
		return err
	}
	var labels map[string]string
	if group != nil {
		labels = map[string]string{"group": strconv.Itoa(group.Index)}
	}
	stopIsNormal.Store(true)
	enterCancellable()
	cut, cutNow := context.WithCancelCause(context.Background())
	defer cutNow(nil)
	onSecondSignal.Store(func(name string) { cutNow(actors.StopCause(name)) })
	// The records go to disk as the requests end: a server's memory is
	// bounded by its requests in flight, not by how many it served.
	st, err := output.NewStream(f.out, output.StreamOptions{WriteOptions: output.WriteOptions{Force: f.force}, Client: true})
	if err != nil {
		return err
	}
	defer st.Close()
	res, runErr := served.Serve(cmd.Context(), spec, served.Options{
		Cut:     cut,
		Records: st,
		HTTP: serve.Options{
			Listen: f.listen, AllowRemote: f.allowRemote, Model: f.model, MaxInFlight: f.maxInFlight, Logger: log, Labels: labels,
			ReadTimeout: f.bodyTimeout,
			Ready: func(a net.Addr) {
				fmt.Fprintf(stderr, "pdemu: serving %s%s (%s) on http://%s/v1 — Ctrl-C drains and writes %s\n", spec.Source, groupNote(group, spec), spec.Router.Policy, a, f.out)
			},
		},
		TimeScale: f.timeScale,
		Logger:    log,
	})
	if res == nil || res.Result == nil {
		return runErr
	}
	if err := st.Write(res.Result); err != nil {
		return errors.Join(runErr, err)
	}
	if group != nil {
		if err := writeGroupParams(f.out, file, f, spec, group); err != nil {
			return errors.Join(runErr, err)
		}
	}
	s := res.Summary
	fmt.Fprintf(stderr, "pdemu: served %d requests (%d failed) in %s; report lag p99 %v emulated; outputs in %s\n",
		s.Requests.Total, s.Requests.Failed, res.Wall.Round(time.Millisecond), res.Lag.P99.Round(time.Microsecond), f.out)
	output.PrintWarnings(stderr, s)
	var partial *actors.PartialError
	if errors.As(runErr, &partial) {
		// The drain was cut: outputs written, partial; the code says why.
		return &exitError{output.StopCode(partial.StoppedBy), runErr}
	}
	if runErr != nil {
		return runErr
	}
	// As run: too many failed requests is exit 3 (a server that served
	// nothing is not an error).
	return output.Check(res.Result, output.CheckOptions{MaxFailed: f.maxFailed, AllowEmpty: true})
}

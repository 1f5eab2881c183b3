package actors

import (
	"errors"
	"fmt"
	"time"

	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/internal/idmap"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/policy"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/transfer"
	"github.com/pdemu/pdemu/workload"
)

// PerfFor returns the cost model the cluster uses for worker w (see
// cluster.PerfFor).
func PerfFor(w topology.Worker) (gpu.Perf, error) { return cluster.PerfFor(w) }

// NICConfigs returns the configuration of every NIC of spec (see
// cluster.NICConfigs).
func NICConfigs(spec *topology.Spec) ([]transfer.Config, error) { return cluster.NICConfigs(spec) }

// Source builds the scenario's workload source (see cluster.Source).
func Source(spec *topology.Spec, skipBad bool) (workload.Source, error) {
	return cluster.Source(spec, skipBad)
}

// boundSeries keeps the worker series to the points instances.csv can
// read: those in force at multiples of the sample interval (1 s when
// unset, as metrics.InstancesPlan reads it), so their memory grows with
// the run's sample times, not its events.
func boundSeries(series []*metrics.Series, interval time.Duration) {
	if interval <= 0 {
		interval = time.Second
	}
	for _, s := range series {
		s.SetGrid(interval)
	}
}

// summarize fills res from the cluster after the run.
func summarize(res *Result, spec *topology.Spec, cl *cluster.Cluster, src workload.Source, clk Clock, deadLetters, panics int64) {
	wl := spec.Workload
	tally := cl.Collector().Tally() // a streaming run's
	if tally == nil {
		res.Records = cl.Collector().Records()
		for i := range res.Records { // the P/D router's decisions (bucketed runs carry theirs in the Job)
			if r := &res.Records[i]; len(r.RouteLog) == 0 {
				r.RouteLog = cl.RouteLog(r.ID)
			}
		}
		// The summary of an in-memory run is tallied as a streaming run's
		// is, from the same records: one computation for both.
		tally = metrics.TallyOf(res.Records, cl.FaultTimes()...)
	} else {
		res.Arrivals = tally.Arrivals()
	}
	res.Links, res.RouterEvents = cl.Links(), cl.RouterEvents()
	res.Evictions = cl.Evictions()
	sum := tally.Summary()
	sum.Scenario = spec.Name
	sum.Policy = spec.Router.Policy
	sum.Seed = wl.Seed
	sum.ScenarioDigest, sum.Vars = spec.Digest, spec.Vars
	if wl.Trace != "" {
		sum.Trace.Path = wl.Trace
		if dg, ok := src.(workload.Digester); ok && wl.Trace == workload.Stdin {
			if d, ok := dg.Digest(); ok {
				sum.Trace.Digest = d
			} else {
				defer func() { // after the loader's warnings
					res.Summary.Trace.Warnings = append(res.Summary.Trace.Warnings, "no trace digest: standard input was not read to its end")
				}()
			}
		} else if d, err := traceDigest(wl.Trace); err == nil {
			sum.Trace.Digest = d
		}
	}
	sum.Clock = metrics.Clock{Mode: wl.Clock, TimeScale: wl.TimeScale}
	if sum.Clock.Mode == "" {
		sum.Clock.Mode = topology.ClockVirtual
	}
	sum.Runtime = metrics.Runtime{DeadLetters: deadLetters, Panics: panics}
	switch c := clk.(type) {
	case *WallClock:
		c.Judge(&sum.Clock, sum.TTFT.P50) // lateness in real and emulated time, saturation, verdict
	case *VirtualClock:
		sum.Runtime.Steps, sum.Runtime.Messages = c.Steps(), c.Messages()
	}
	tally.AttachWorkers(&sum, cl.Workers()) // request counts and shares (fused workers too)
	sum.PerBucket = tally.Buckets()
	var st idmap.Dense[policy.SessionStats]
	if cl.Sessions(st.Put) {
		res.Sessions, sum.Router = sessionRows(tally, &st)
		if n, f, mx := cl.ForgottenSessions(); n > 0 { // pdemu serve: idle sessions forgotten
			r := sum.Router
			r.SessionsForgotten = n
			r.Migrations, r.Blacklists, r.Fallbacks, r.Rejections = r.Migrations+f.Migrations, r.Blacklists+f.Blacklists, r.Fallbacks+f.Fallbacks, r.Rejections+f.Rejections
			r.MaxSessionMigrations = max(r.MaxSessionMigrations, mx)
		}
	}
	all := cl.Faults()
	res.Faults = metrics.FaultsUntil(all, res.End)
	tally.Recover(res.Faults)
	sum.Faults = metrics.SummarizeFaults(res.Faults)
	if nr := metrics.NotReached(all, res.End); len(nr) > 0 {
		if sum.Faults == nil {
			sum.Faults = &metrics.FaultSummary{List: []metrics.FaultReport{}}
		}
		sum.Faults.NotReached = nr
	}
	if wr, ok := src.(workload.Warner); ok {
		sum.Trace.Warnings = wr.Warnings()
	}
	if sk, ok := src.(workload.Skipper); ok {
		sum.Requests.SkippedBad = sk.Skipped()
	}
	slo := spec.SLO
	sum.SLO = tally.SLO(metrics.SLO{TTFT: slo.TTFT, TPOT: slo.TPOT, E2E: slo.E2E, Attainment: slo.Attainment}, sum)
	sum.Warnings = metrics.Warnings(sum) // with the trace's and the SLO's
	res.Summary = sum
}

// check: nothing is lost, every request read from the source ended
// exactly once, and the run had no error, panic or dead letter.
func check(res *Result, cl *cluster.Cluster, runErr, nodeErr error, deadLetters int64) error {
	var errs []error
	if runErr != nil {
		errs = append(errs, runErr)
	}
	if nodeErr != nil {
		errs = append(errs, nodeErr)
	}
	if deadLetters > 0 {
		errs = append(errs, fmt.Errorf("%d dead letters: messages reached actors that were gone (see the log)", deadLetters))
	}
	sum := res.Summary
	if read := cl.Read(); len(errs) == 0 && read != sum.Requests.Total {
		lost := []int64{}
		for id := int64(0); id < int64(read) && len(lost) < 10; id++ {
			if !cl.Collector().Seen(id) {
				lost = append(lost, id)
			}
		}
		errs = append(errs, fmt.Errorf("%d requests were released but %d ended (first missing ids: %v)", read, sum.Requests.Total, lost))
	}
	if r := sum.Requests; r.Total != r.Completed+r.Failed+r.Aborted {
		errs = append(errs, fmt.Errorf("requests.total %d != completed %d + failed %d + aborted %d", r.Total, r.Completed, r.Failed, r.Aborted))
	}
	return errors.Join(errs...)
}

// sessionRows joins the router's per-session counters with the records'
// (by), in session index order (deterministic output).
func sessionRows(by *metrics.Tally, st *idmap.Dense[policy.SessionStats]) ([]metrics.SessionRow, *metrics.RouterTotals) {
	rows := make([]metrics.SessionRow, 0, by.NumSessions())
	tot := &metrics.RouterTotals{}
	for s, a := range by.Sessions() {
		c, _ := st.Get(s)
		rows = append(rows, metrics.SessionRow{Session: a.Name, Requests: a.Requests, Direct: a.Direct,
			Migrations: c.Migrations, Blacklists: c.Blacklists, Fallbacks: c.Fallbacks, Rejections: c.Rejections})
		tot.Migrations += c.Migrations
		tot.MaxSessionMigrations = max(tot.MaxSessionMigrations, c.Migrations)
		tot.Blacklists += c.Blacklists
		tot.Fallbacks += c.Fallbacks
		tot.Rejections += c.Rejections
	}
	return rows, tot
}

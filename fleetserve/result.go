package fleetserve

import (
	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/output"
	"github.com/pdemu/pdemu/topology"
)

// RunResult turns a served fleet's outcome into the usual run outputs
// (output.Write): per_request.csv has one row per HTTP request, with the
// worker that served it (p for a prefill call, d for a decode call; a
// pulled decode call names its prefill worker in p too), its mode (Vanilla:
// a prefill call; Seed: a decode call whose KV was pulled, transfer_bytes
// moved; Direct: a decode call prefilled locally) and its timeline;
// links.csv the NICs' load; summary.json the tallies. A failed request is
// a failed row with its reason. Write writes it with the client columns.
func (r *Result) RunResult(spec *topology.Spec) (*actors.Result, error) {
	col := metrics.NewCollector(r.Prefill, r.Decode)
	for _, j := range r.Jobs {
		if err := col.Add(j); err != nil {
			return nil, err
		}
	}
	recs := col.Records()
	var unfinished []metrics.Record
	for _, j := range r.InFlight {
		unfinished = append(unfinished, col.Unfinished(j))
	}
	tally := metrics.TallyOf(recs)
	sum := tally.Summary()
	sum.Scenario = spec.Name
	sum.Policy = "endpoints" // the scenario's router was bypassed
	sum.Seed = spec.Workload.Seed
	sum.ScenarioDigest, sum.Vars = spec.Digest, spec.Vars
	sum.Clock = metrics.Clock{Mode: topology.ClockWall, TimeScale: r.Scale}
	if r.Partial {
		metrics.MarkPartial(&sum, "drain-timeout", r.Unfinished)
	}
	sum.Warnings = metrics.Warnings(sum)
	if r.br != nil {
		r.br.Judge(&sum, r.Scale) // summary.json served, as a cluster endpoint's
	}
	return &actors.Result{Summary: sum, Records: recs, Unfinished: unfinished, End: r.End, Wall: r.Wall, Links: r.Links}, nil
}

// Write writes rr (RunResult's) into dir as output.Write does, with
// per_request.csv's client columns (metrics.ClientColumns) from
// r.Clients, as `pdemu serve`'s cluster endpoint writes them: empty where
// the client never got that event (an unfinished request: what its
// client got before the drain timed out).
func (r *Result) Write(dir string, rr *actors.Result, opts output.WriteOptions) error {
	st, err := output.NewStream(dir, output.StreamOptions{WriteOptions: opts, Client: true})
	if err != nil {
		return err
	}
	defer st.Close()
	for _, rec := range rr.Records {
		if err := st.RecordClient(rec, r.Clients[rec.ID]); err != nil {
			return err
		}
	}
	for _, j := range r.InFlight {
		if c, ok := r.Clients[j.Req.ID]; ok {
			st.UnfinishedClient(j.Req.ID, c)
		}
	}
	streamed := *rr
	streamed.Records, streamed.Arrivals = nil, metrics.ArrivalsOf(rr.Records)
	return st.Write(&streamed)
}

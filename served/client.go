package served

import (
	"sync"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/metrics"
)

// ClientRecordSink is a Records sink that also writes what each request's
// client saw (output.Stream with StreamOptions.Client): a served run then
// joins each record with its client times before handing it on.
type ClientRecordSink interface {
	actors.RecordSink
	RecordClient(metrics.Record, metrics.ClientTimes) error
}

// clientJoin joins the two halves of a served request's per_request.csv
// row, which come in either order from two sides: its record when the
// request ends in the cluster (the collector, an actor goroutine), its
// client times when the HTTP response was written (the relay, an HTTP
// goroutine; serve.Bridge.SetClientSink). The first to come waits in a
// map for the other, so what it holds is bounded by the requests in
// flight; every call to the sink is made under mu (the sink is not safe
// for concurrent use).
//
// Every request the relay served reports its client times, so no record
// waits for ever; flush hands on what is left at the end of the run
// (client columns empty) and the client times whose record never came
// (the request is unfinished: Stream.Write lists it) to the sink's
// UnfinishedClient when it has one (output.Stream: the unfinished row
// then has what its client saw, e.g. the first token of a stream cut by
// a second signal), else drops them.
type clientJoin struct {
	mu      sync.Mutex
	sink    ClientRecordSink
	recs    map[int64]metrics.Record
	clients map[int64]metrics.ClientTimes
	err     error
	done    bool
}

func newClientJoin(sink ClientRecordSink) *clientJoin {
	return &clientJoin{sink: sink, recs: map[int64]metrics.Record{}, clients: map[int64]metrics.ClientTimes{}}
}

// Record implements actors.RecordSink.
func (j *clientJoin) Record(r metrics.Record) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return j.err
	}
	c, ok := j.clients[r.ID]
	if !ok && !j.done {
		j.recs[r.ID] = r
		return nil
	}
	delete(j.clients, r.ID)
	j.err = j.sink.RecordClient(r, c)
	return j.err
}

// Eviction passes evictions.csv rows on (EvictionSink) when the sink takes
// them.
func (j *clientJoin) Eviction(r metrics.EvictionRow) error {
	if es, ok := j.sink.(EvictionSink); ok {
		return es.Eviction(r)
	}
	return nil
}

// client takes request id's client times (serve.Bridge's client sink).
func (j *clientJoin) client(id int64, c metrics.ClientTimes) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.done {
		return
	}
	r, ok := j.recs[id]
	if !ok {
		j.clients[id] = c
		return
	}
	delete(j.recs, id)
	if j.err == nil {
		j.err = j.sink.RecordClient(r, c)
	}
}

// flush hands on the records still waiting (no client times) and stops
// joining: later records go straight on. It returns the first error of
// the sink.
func (j *clientJoin) flush() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.done = true
	for id, r := range j.recs {
		if j.err == nil {
			j.err = j.sink.RecordClient(r, metrics.ClientTimes{})
		}
		delete(j.recs, id)
	}
	if us, ok := j.sink.(unfinishedClientSink); ok {
		for id, c := range j.clients {
			us.UnfinishedClient(id, c)
		}
	}
	clear(j.clients)
	return j.err
}

// unfinishedClientSink is a ClientRecordSink that also takes the client
// times of requests that never ended (output.Stream).
type unfinishedClientSink interface {
	UnfinishedClient(id int64, c metrics.ClientTimes)
}

// pending is how many records and client times wait for their other half.
func (j *clientJoin) pending() (recs, clients int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.recs), len(j.clients)
}

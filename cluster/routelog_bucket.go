package cluster

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/policy/bucket"
)

// A bucketed run's routing_log.jsonl line (docs/OUTPUTS.md) is encoded by
// hand, by appendBucketLog, into a pooled scratch buffer and copied out at
// its exact size: json.Marshal's reflection was ~8 % of a 4-way DP run.
// appendBucketLog writes exactly the bytes json.Marshal writes for a
// bucketLog (TestAppendBucketLogMatchesJSON compares the two on random
// decisions); a decision with a non-finite score, which json.Marshal
// refuses, goes through marshalBucketLog's error line, as it always did.

type bucketCand struct {
	Bucket          string  `json:"bucket"`
	Score           float64 `json:"score"`
	Eligible        bool    `json:"eligible"`
	QueueSum        int     `json:"queue_sum"`
	QueueMax        int     `json:"queue_max"`
	KVUsed          int64   `json:"kv_used"`
	KVTotal         int64   `json:"kv_total"`
	Active          int     `json:"active"`
	PredictedPrefix int     `json:"predicted_prefix"`
	DrainMS         float64 `json:"drain_ms"`
}

type instCand struct {
	Instance        int     `json:"instance"`
	Score           float64 `json:"score"`
	PredictedPrefix int     `json:"predicted_prefix"`
	Probed          bool    `json:"probed,omitempty"`
	Queue           int     `json:"queue"`
	Running         int     `json:"running"`
	KVUsed          int64   `json:"kv_used"`
}

// bucketLog is one routing_log.jsonl line of a bucketed run.
type bucketLog struct {
	ID             int64        `json:"id"`
	InputTokens    int          `json:"input_tokens"`
	GlobalMode     string       `json:"global_mode"`
	LocalMode      string       `json:"local_mode"`
	ChosenBucket   string       `json:"chosen_bucket"`
	StrictBucket   string       `json:"strict_bucket"`
	ChosenInstance int          `json:"chosen_instance"`
	GlobalReason   string       `json:"global_reason"`
	LocalReason    string       `json:"local_reason"`
	ProbeMS        float64      `json:"probe_ms,omitempty"`
	Buckets        []bucketCand `json:"bucket_candidates"`
	Instances      []instCand   `json:"instance_candidates"`
}

// newBucketLog is the line of job's global decision g and local decision
// l (nil: none was made) as a struct, for encoding/json.
func newBucketLog(job *gpu.Job, g bucket.GlobalDecision, l *bucket.LocalDecision) *bucketLog {
	rec := &bucketLog{ID: job.Req.ID, InputTokens: job.Req.InputLen, GlobalMode: g.Mode, GlobalReason: g.Reason, ChosenInstance: -1,
		Buckets: []bucketCand{}, Instances: []instCand{}}
	for _, c := range g.Candidates {
		v := c.View
		rec.Buckets = append(rec.Buckets, bucketCand{v.Name, c.Score, c.Eligible, v.QueueSum, v.QueueMax, v.KVUsed, v.KVTotal,
			v.Active, v.PredictedPrefix, float64(v.DrainTime) / 1e6})
		if v.ID == g.Bucket {
			rec.ChosenBucket = v.Name
		}
		if v.ID == g.StrictBucket {
			rec.StrictBucket = v.Name
		}
	}
	if l != nil {
		rec.LocalMode, rec.LocalReason, rec.ChosenInstance = l.Mode, l.Reason, l.Instance
		rec.ProbeMS = float64(l.ProbeLatency) / 1e6
		for _, c := range l.Candidates {
			rec.Instances = append(rec.Instances, instCand{c.View.Index, c.Score, c.PredictedPrefix, c.Probed,
				c.View.Queue, c.View.Running, c.View.KVUsed})
		}
	}
	return rec
}

// marshalBucketLog is rec's line through encoding/json, or a parseable
// error line when it cannot be encoded (a non-finite float).
func marshalBucketLog(rec *bucketLog) []byte {
	b, err := json.Marshal(rec)
	if err != nil {
		return []byte(fmt.Sprintf(`{"id":%d,"error":%q}`, rec.ID, err.Error()))
	}
	return b
}

// bucketEncoders hold routeLog's scratch buffers and line chunks (bucket
// and global nodes run on their own goroutines; each takes an encoder for
// one line).
var bucketEncoders = sync.Pool{New: func() any { return &lineEncoder{scratch: make([]byte, 0, 1024)} }}

// routeLog renders one routing_log.jsonl line: job's global decision g
// and local decision l (nil: none was made).
func routeLog(job *gpu.Job, g bucket.GlobalDecision, l *bucket.LocalDecision) []byte {
	e := bucketEncoders.Get().(*lineEncoder)
	defer bucketEncoders.Put(e)
	b, ok := appendBucketLog(e.scratch[:0], job, g, l)
	e.scratch = b
	if !ok {
		return marshalBucketLog(newBucketLog(job, g, l))
	}
	return e.cut(b)
}

// appendBucketLog appends the JSON encoding of newBucketLog(job, g, l) to
// b without building it; ok is false, and b unchanged, when a float is
// NaN or infinite.
func appendBucketLog(b []byte, job *gpu.Job, g bucket.GlobalDecision, l *bucket.LocalDecision) ([]byte, bool) {
	for i := range g.Candidates {
		if !finite(g.Candidates[i].Score) {
			return b, false
		}
	}
	if l != nil {
		for i := range l.Candidates {
			if !finite(l.Candidates[i].Score) {
				return b, false
			}
		}
	}
	var chosen, strict string
	for i := range g.Candidates {
		v := &g.Candidates[i].View
		if v.ID == g.Bucket {
			chosen = v.Name
		}
		if v.ID == g.StrictBucket {
			strict = v.Name
		}
	}
	var localMode, localReason string
	inst := -1
	probe := 0.0
	if l != nil {
		localMode, localReason, inst = l.Mode, l.Reason, l.Instance
		probe = float64(l.ProbeLatency) / 1e6
	}
	b = appendIntField(b, `{"id":`, job.Req.ID)
	b = appendIntField(b, `,"input_tokens":`, int64(job.Req.InputLen))
	b = appendStrField(b, `,"global_mode":"`, g.Mode)
	b = appendStrField(b, `,"local_mode":"`, localMode)
	b = appendStrField(b, `,"chosen_bucket":"`, chosen)
	b = appendStrField(b, `,"strict_bucket":"`, strict)
	b = appendIntField(b, `,"chosen_instance":`, int64(inst))
	b = appendStrField(b, `,"global_reason":"`, g.Reason)
	b = appendStrField(b, `,"local_reason":"`, localReason)
	if probe != 0 {
		b = appendJSONFloat(append(b, `,"probe_ms":`...), probe)
	}
	b = append(b, `,"bucket_candidates":[`...)
	for i := range g.Candidates {
		c := &g.Candidates[i]
		v := &c.View
		if i > 0 {
			b = append(b, ',')
		}
		b = appendStrField(b, `{"bucket":"`, v.Name)
		b = appendJSONFloat(append(b, `,"score":`...), c.Score)
		b = strconv.AppendBool(append(b, `,"eligible":`...), c.Eligible)
		b = appendIntField(b, `,"queue_sum":`, int64(v.QueueSum))
		b = appendIntField(b, `,"queue_max":`, int64(v.QueueMax))
		b = appendIntField(b, `,"kv_used":`, v.KVUsed)
		b = appendIntField(b, `,"kv_total":`, v.KVTotal)
		b = appendIntField(b, `,"active":`, int64(v.Active))
		b = appendIntField(b, `,"predicted_prefix":`, int64(v.PredictedPrefix))
		b = appendJSONFloat(append(b, `,"drain_ms":`...), float64(v.DrainTime)/1e6)
		b = append(b, '}')
	}
	b = append(b, `],"instance_candidates":[`...)
	if l != nil {
		for i := range l.Candidates {
			c := &l.Candidates[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = appendIntField(b, `{"instance":`, int64(c.View.Index))
			b = appendJSONFloat(append(b, `,"score":`...), c.Score)
			b = appendIntField(b, `,"predicted_prefix":`, int64(c.PredictedPrefix))
			if c.Probed {
				b = append(b, `,"probed":true`...)
			}
			b = appendIntField(b, `,"queue":`, int64(c.View.Queue))
			b = appendIntField(b, `,"running":`, int64(c.View.Running))
			b = appendIntField(b, `,"kv_used":`, c.View.KVUsed)
			b = append(b, '}')
		}
	}
	return append(b, "]}"...), true
}

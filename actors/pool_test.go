package actors

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/internal/testlog"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/workload"
)

// bucketHCL is a three-bucket deployment (short/medium/long) of fused
// workers with the given global and local policies, on the agentic
// generator with prompts spread across the buckets.
func bucketHCL(global, local string) string {
	var b strings.Builder
	pools := []struct {
		name     string
		min, max int
		n        int
	}{{"short", 0, 12000, 2}, {"medium", 12001, 20000, 2}, {"long", 20001, 1 << 20, 2}}
	for _, p := range pools {
		for i := 0; i < p.n; i++ {
			fmt.Fprintf(&b, "fused \"%s%d\" {\n  gpu = \"H200-SXM\"\n  model = \"qwen3-coder-30b-a3b\"\n  kv_budget_tokens = 200000\n}\n", p.name[:1], i)
		}
	}
	for _, p := range pools {
		fmt.Fprintf(&b, "bucket %q {\n  input_tokens = [%d, %d]\n  instances = [\"%s0\", \"%s1\"]\n}\n", p.name, p.min, p.max, p.name[:1], p.name[:1])
	}
	fmt.Fprintf(&b, "global_router %q {}\nlocal_router %q {}\n", global, local)
	b.WriteString("workload {\n  seed = 5\n  generator \"agentic\" {\n    sessions = 12\n    turns = 16\n    first_tokens = 4000\n    append_tokens = 900\n  }\n}\n")
	return b.String()
}

func runHCL(t *testing.T, src string) *Result {
	t.Helper()
	spec, err := topology.Parse("test.hcl", []byte(src), topology.Options{})
	require.NoError(t, err)
	res, err := Run(context.Background(), spec, Options{Logger: testlog.New(t)})
	require.NoError(t, err)
	s := res.Summary
	require.Equal(t, s.Requests.Total, s.Requests.Completed+s.Requests.Failed)
	require.Zero(t, s.Runtime.DeadLetters)
	return res
}

func TestBucketsStrictRoutesByLength(t *testing.T) {
	res := runHCL(t, bucketHCL("strict_input_length", "least_loaded"))
	require.Equal(t, 12*16, res.Summary.Requests.Total)
	for _, r := range res.Records {
		require.False(t, r.Failed, "request %d: %s", r.ID, r.Reason)
		assert.True(t, r.LengthBucketMatch, "request %d", r.ID)
		want := "short"
		switch {
		case r.InputTokens > 20000:
			want = "long"
		case r.InputTokens > 12000:
			want = "medium"
		}
		assert.Equal(t, want, r.Bucket, "request %d with %d tokens", r.ID, r.InputTokens)
		assert.Equal(t, "Fused", r.Mode)
		assert.NotEmpty(t, r.RouteLog)
	}
	require.Len(t, res.Summary.PerBucket, 3)
}

func TestBucketScoreDiffersFromStrict(t *testing.T) {
	strict := runHCL(t, bucketHCL("strict_input_length", "cache_affinity"))
	score := runHCL(t, bucketHCL("bucket_score", "cache_affinity"))
	match := func(r *Result) int {
		n := 0
		for _, rec := range r.Records {
			if rec.LengthBucketMatch {
				n++
			}
		}
		return n
	}
	assert.Equal(t, len(strict.Records), match(strict))
	assert.Less(t, match(score), len(score.Records), "bucket_score follows the cache across length boundaries")
	cached := func(r *Result) (c int) {
		for _, rec := range r.Records {
			c += rec.CachedTokens
		}
		return c
	}
	t.Logf("length match strict %d/%d score %d/%d; cached tokens strict %d score %d; ttft p50 strict %.1f score %.1f ms",
		match(strict), len(strict.Records), match(score), len(score.Records), cached(strict), cached(score),
		strict.Summary.TTFT.P50, score.Summary.TTFT.P50)
	assert.Greater(t, cached(score), cached(strict), "staying with the cache reuses more prefix")
}

func TestBucketsIsolateCaches(t *testing.T) {
	// Under strict routing a session that crosses from short to medium
	// finds none of its own blocks in medium (they were cached in short):
	// at most the system prompt every session shares (4000 tokens = 166
	// full 24-token blocks).
	res := runHCL(t, bucketHCL("strict_input_length", "cache_affinity"))
	last := map[string]metrics.Record{}
	crossed := 0
	for _, r := range res.Records {
		if prev, ok := last[r.Session]; ok && prev.Bucket != r.Bucket {
			crossed++
			assert.LessOrEqual(t, r.CachedTokens, 166*24, "request %d moved %s→%s and must not see %s's cache", r.ID, prev.Bucket, r.Bucket, prev.Bucket)
		}
		last[r.Session] = r
	}
	assert.Positive(t, crossed)
}

func TestBucketRunsAreDeterministic(t *testing.T) {
	a := perRequestCSV(t, runHCL(t, bucketHCL("bucket_score", "precise")))
	b := perRequestCSV(t, runHCL(t, bucketHCL("bucket_score", "precise")))
	assert.Equal(t, a, b)
}

func TestSinglePoolRouter(t *testing.T) {
	src := ""
	for i := 0; i < 4; i++ {
		src += fmt.Sprintf("fused \"w%d\" {\n  gpu = \"H200-SXM\"\n  model = \"qwen3-coder-30b-a3b\"\n}\n", i)
	}
	src += "router \"cache_affinity\" {}\nworkload {\n  generator \"agentic\" {\n    sessions = 8\n    turns = 8\n  }\n}\n"
	res := runHCL(t, src)
	assert.Equal(t, 64, res.Summary.Modes["Fused"])
	cached := 0
	for _, r := range res.Records {
		cached += r.CachedTokens
	}
	assert.Positive(t, cached, "sessions find their prefix on their instance")
}

// sessionsSource replays fixed sessions: long ones have prompts above
// 20000 tokens, short ones below 12000.
type sessionsSource struct {
	reqs []*workload.Request
	i    int
}

func (s *sessionsSource) Next() (*workload.Request, error) {
	if s.i == len(s.reqs) {
		return nil, io.EOF
	}
	s.i++
	return s.reqs[s.i-1], nil
}

func newSessionsSource(short, long int) *sessionsSource {
	var all []*workload.Request
	add := func(name string, idx int, base int) {
		in := base
		for t := 0; t < 10; t++ {
			if t > 0 {
				in += 600
			}
			blocks := make([]uint64, in/24)
			for i := range blocks {
				blocks[i] = uint64(idx+1)<<32 | uint64(i+1)
			}
			all = append(all, &workload.Request{SessionName: name, Turn: t, Arrival: time.Duration(idx) * 100 * time.Millisecond,
				InputLen: in, OutputLen: 80, Blocks: blocks, BlockTokens: 24, AppendLen: 600, Think: time.Second, Last: t == 9})
		}
	}
	for i := 0; i < short; i++ {
		add(fmt.Sprintf("short%d", i), i, 4000)
	}
	for i := 0; i < long; i++ {
		add(fmt.Sprintf("long%d", i), short+i, 30000)
	}
	// Dense sessions and ids in arrival order (turns of a session in order).
	sort.SliceStable(all, func(i, j int) bool { return all[i].Arrival < all[j].Arrival })
	sess := map[string]int32{}
	for i, r := range all {
		if _, ok := sess[r.SessionName]; !ok {
			sess[r.SessionName] = int32(len(sess))
		}
		r.Session, r.ID = sess[r.SessionName], int64(i)
	}
	return &sessionsSource{reqs: all}
}

// TestBucketsAdvanceIndependently: a loaded long bucket does not change
// anything the short bucket does (its instances run on their own).
func TestBucketsAdvanceIndependently(t *testing.T) {
	run := func(long int) map[string]metrics.Record {
		spec, err := topology.Parse("test.hcl", []byte(bucketHCL("strict_input_length", "least_loaded")), topology.Options{})
		require.NoError(t, err)
		res, err := Run(context.Background(), spec, Options{Logger: testlog.New(t), Source: newSessionsSource(4, long)})
		require.NoError(t, err)
		out := map[string]metrics.Record{}
		for _, r := range res.Records {
			if r.Bucket == "short" {
				out[fmt.Sprintf("%s/%d", r.Session, r.Turn)] = r
			}
		}
		return out
	}
	alone, loaded := run(0), run(12)
	require.Len(t, alone, 40)
	require.Len(t, loaded, 40)
	for k, a := range alone {
		b := loaded[k]
		assert.Equal(t, a.TTFT, b.TTFT, k)
		assert.Equal(t, a.E2E, b.E2E, k)
		assert.Equal(t, a.D, b.D, k)
	}
}

// TestRemoteFetchStaysInBucket: with an RDMA fabric inside each bucket, an
// instance fetches a prefix another instance of its bucket holds instead
// of recomputing it, and still never sees another bucket's blocks.
func TestRemoteFetchStaysInBucket(t *testing.T) {
	withFetch := func(src string) string {
		return strings.ReplaceAll(src, "  instances = [", "  remote_fetch_bandwidth = \"200Gbps\"\n  instances = [")
	}
	plain := runHCL(t, bucketHCL("strict_input_length", "least_loaded"))
	fetched := runHCL(t, withFetch(bucketHCL("strict_input_length", "least_loaded")))
	sum := func(r *Result) (cached int, bytes int64) {
		for _, rec := range r.Records {
			cached += rec.CachedTokens
			bytes += rec.TransferBytes
		}
		return
	}
	c0, b0 := sum(plain)
	c1, b1 := sum(fetched)
	t.Logf("cached tokens %d -> %d, remote fetch bytes %d -> %d; ttft p50 %.1f -> %.1f ms", c0, c1, b0, b1,
		plain.Summary.TTFT.P50, fetched.Summary.TTFT.P50)
	assert.Zero(t, b0)
	assert.Positive(t, b1)
	assert.Greater(t, c1, c0)

	last := map[string]metrics.Record{}
	for _, r := range fetched.Records {
		if prev, ok := last[r.Session]; ok && prev.Bucket != r.Bucket {
			assert.LessOrEqual(t, r.CachedTokens, 166*24, "request %d fetched across buckets", r.ID)
		}
		last[r.Session] = r
	}
}

func TestBucketsWallClock(t *testing.T) {
	if testing.Short() {
		t.Skip("wall-clock run takes real time")
	}
	spec, err := topology.Parse("test.hcl", []byte(bucketHCL("bucket_score", "precise")), topology.Options{})
	require.NoError(t, err)
	spec.Workload.Clock = topology.ClockWall
	spec.Workload.TimeScale = 200
	spec.Workload.MaxRequests = 40
	res, err := Run(context.Background(), spec, Options{Logger: testlog.New(t), WallTimeout: time.Minute})
	require.NoError(t, err)
	assert.Equal(t, 40, res.Summary.Requests.Total)
	assert.Equal(t, 40, res.Summary.Requests.Completed+res.Summary.Requests.Failed)
	require.NotNil(t, res.Summary.Clock.Lateness)
	assert.Zero(t, res.Summary.Runtime.DeadLetters)
}

// TestDRAMTierKeepsEvictedPrefixes: with HBM prefix caches too small for
// every session, a DRAM tier turns recomputation into loads.
func TestDRAMTierKeepsEvictedPrefixes(t *testing.T) {
	src := bucketHCL("strict_input_length", "least_loaded")
	small := strings.ReplaceAll(src, "kv_budget_tokens = 200000", "kv_budget_tokens = 60000")
	withDRAM := strings.ReplaceAll(small, "kv_budget_tokens = 60000", "kv_budget_tokens = 60000\n  dram_cache_tokens = 2000000")
	sum := func(r *Result) (c int) {
		for _, rec := range r.Records {
			c += rec.CachedTokens
		}
		return c
	}
	a, b := runHCL(t, small), runHCL(t, withDRAM)
	t.Logf("cached tokens without DRAM %d, with %d; ttft p50 %.1f -> %.1f ms", sum(a), sum(b), a.Summary.TTFT.P50, b.Summary.TTFT.P50)
	assert.Greater(t, sum(b), sum(a))
}

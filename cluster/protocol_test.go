package cluster_test

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/cluster/clustertest"
	"github.com/pdemu/pdemu/policy/bucket"
	"github.com/pdemu/pdemu/scenarios"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/workload"
)

var update = flag.Bool("update", false, "rewrite the protocol table in doc.go")

// msgName is a message's type name, * first for pointers.
func msgName(m any) string {
	t := reflect.TypeOf(m)
	if t.Kind() == reflect.Pointer {
		return "*" + t.Elem().Name()
	}
	return t.Name()
}

// renderProtocol renders Protocol as the package documentation's table.
func renderProtocol() string {
	rows := [][]string{{"message", "sender → receiver", "payload", "Job owner afterwards"}}
	for _, h := range cluster.Protocol {
		rows = append(rows, []string{msgName(h.Msg), string(h.From) + " → " + string(h.To), h.Payload, h.Owner})
	}
	width := make([]int, 4)
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	var b strings.Builder
	for k, r := range rows {
		b.WriteString("//\t")
		for i, c := range r {
			b.WriteString(" " + c + strings.Repeat(" ", width[i]-len([]rune(c))) + " ")
			if i < 3 {
				b.WriteString("|")
			}
		}
		b.WriteString("\n")
		if k == 0 {
			b.WriteString("//\t")
			for i := range r {
				b.WriteString(strings.Repeat("-", width[i]+2))
				if i < 3 {
					b.WriteString("+")
				}
			}
			b.WriteString("\n")
		}
	}
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// TestProtocolDoc: the package documentation shows Protocol as it is.
func TestProtocolDoc(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	const begin, end = "// The table, row by row:\n", "//\n// # Policies\n"
	s := string(src)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	require.True(t, i >= 0 && j > i, "doc.go lacks the protocol markers")
	want := s[:i+len(begin)] + "//\n" + renderProtocol() + s[j:]
	if *update {
		require.NoError(t, os.WriteFile("doc.go", []byte(want), 0o644))
		return
	}
	assert.Equal(t, want, s, "the protocol table in doc.go is stale: go test ./cluster -run TestProtocolDoc -update")
}

type hop struct {
	msg      string
	from, to cluster.Kind
}

func (h hop) String() string { return fmt.Sprintf("%s %s → %s", h.msg, h.from, h.to) }

// walk runs spec in memory and records every hop.
func walk(t *testing.T, spec *topology.Spec, src workload.Source, seen map[hop]bool) error {
	t.Helper()
	net, err := clustertest.New(spec, src)
	require.NoError(t, err)
	kind := func(a cluster.Addr) cluster.Kind {
		if a < 0 {
			return cluster.KindRun
		}
		return net.Cluster.Kinds[a]
	}
	net.Tap = func(from cluster.Addr, e cluster.Envelope) {
		seen[hop{msgName(e.Msg), kind(from), kind(e.To)}] = true
	}
	return net.Run()
}

func parse(t *testing.T, name, src string) *topology.Spec {
	t.Helper()
	spec, err := topology.Parse(name, []byte(src), topology.Options{})
	require.NoError(t, err)
	return spec
}

func embedded(t *testing.T, name string) *topology.Spec {
	t.Helper()
	src, err := scenarios.Read(name)
	require.NoError(t, err)
	return parse(t, "<embedded>/"+name, string(src))
}

// source is a scripted workload: its requests, then err (io.EOF if nil).
type source struct {
	reqs []*workload.Request
	err  error
}

func (s *source) Next() (*workload.Request, error) {
	if len(s.reqs) == 0 {
		if s.err != nil {
			return nil, s.err
		}
		return nil, io.EOF
	}
	r := s.reqs[0]
	s.reqs = s.reqs[1:]
	return r, nil
}

func req(id int64, session int32, in int) *workload.Request {
	return &workload.Request{ID: id, Session: session, SessionName: fmt.Sprint("s", session), InputLen: in, OutputLen: 4, Last: true}
}

// failLocal is a local router that never finds an instance.
type failLocal struct{ bucket.Local }

func (f failLocal) Route(r *workload.Request, inst []bucket.InstanceView, p bucket.Prober, now time.Duration) bucket.LocalDecision {
	return bucket.LocalDecision{Instance: -1, Reason: "test"}
}

// TestProtocolWalk runs scenarios that reach every path of the protocol
// (the embedded generator scenarios, D→P sync, a bucket gap, a trace error, a
// duplicate request, a local router that fails) through the in-memory
// network and checks that the nodes send exactly the hops of Protocol.
func TestProtocolWalk(t *testing.T) {
	seen := map[hop]bool{}
	for _, name := range []string{"sticky-1p3d.hcl", "kvc-v1-1p3d.hcl", "buckets-3.hcl", "dp4.hcl"} {
		spec := embedded(t, name)
		spec.Workload.MaxRequests = 400
		src, err := cluster.Source(spec, false)
		require.NoError(t, err)
		require.NoError(t, walk(t, spec, src, seen), name)
	}

	// D→P incremental KV sync (router kvc { dp_sync = true }).
	sync := embedded(t, "kvc-v1-1p3d.hcl")
	sync.Router.DPSync = true
	sync.Workload.MaxRequests = 400
	src, err := cluster.Source(sync, false)
	require.NoError(t, err)
	require.NoError(t, walk(t, sync, src, seen), "dp_sync")

	// precise probes instances at a latency before submitting.
	probe := embedded(t, "dp4.hcl")
	probe.LocalRouter.Policy, probe.LocalRouter.ProbeLatency = bucket.PolicyPrecise, 10*time.Microsecond
	probe.Workload.MaxRequests = 50
	src, err = cluster.Source(probe, false)
	require.NoError(t, err)
	require.NoError(t, walk(t, probe, src, seen))

	// The global router finds no bucket for an input length in a gap.
	gap := embedded(t, "buckets-3-strict.hcl")
	gap.Buckets[1].Max = 20000 // a gap up to long's 40961
	require.NoError(t, walk(t, gap, &source{reqs: []*workload.Request{req(0, 0, 30000)}}, seen))

	// A trace error fails the run from the driver.
	pd := embedded(t, "sticky-1p3d.hcl")
	bad := errors.New("bad trace")
	require.ErrorIs(t, walk(t, pd, &source{reqs: []*workload.Request{req(0, 0, 100)}, err: bad}, seen), bad)

	// A request that ends twice fails the run from the collector.
	require.ErrorContains(t, walk(t, pd, &source{reqs: []*workload.Request{req(0, 0, 100), req(0, 1, 100)}}, seen), "ended twice")

	// A local router that finds no instance.
	key := cluster.PolicyKey{Tier: cluster.TierLocal, Name: "test_fail"}
	cluster.Registry[key] = cluster.Constructor{Local: func(cfg bucket.LocalConfig, n int) (bucket.Local, error) {
		cfg.Policy = bucket.PolicyRoundRobin
		l, err := bucket.NewLocal(cfg, n)
		return failLocal{l}, err
	}}
	defer delete(cluster.Registry, key)
	dp := embedded(t, "dp4.hcl")
	dp.LocalRouter.Policy = key.Name
	require.NoError(t, walk(t, dp, &source{reqs: []*workload.Request{req(0, 0, 100)}}, seen))

	// Open-ended runs (a server's): requests, aborts and EndOfInput from
	// outside, on a P/D and a fused cluster.
	for _, name := range []string{"1p3d-mlx5.hcl", "buckets-3.hcl"} {
		open := openEnded(t, name, 2, time.Millisecond, time.Second)
		abortAll(open, 1, 2*time.Millisecond, 500*time.Millisecond)
		open.Tap = func(from cluster.Addr, e cluster.Envelope) {
			k := cluster.KindRun
			if from >= 0 {
				k = open.Cluster.Kinds[from]
			}
			to := cluster.KindRun
			if e.To >= 0 {
				to = open.Cluster.Kinds[e.To]
			}
			seen[hop{msgName(e.Msg), k, to}] = true
		}
		require.NoError(t, open.Run(), name)
	}

	// Fault schedules (faults_test.go).
	for _, spec := range faultWalkSpecs(t) {
		src, err := cluster.Source(spec, false)
		require.NoError(t, err)
		require.NoError(t, walk(t, spec, src, seen))
	}
	race, rsrc := raceSpec(t)
	require.NoError(t, walk(t, race, rsrc, seen))

	table := map[hop]bool{}
	for _, h := range cluster.Protocol {
		k := hop{msgName(h.Msg), h.From, h.To}
		assert.False(t, table[k], "duplicate row %v", k)
		table[k] = true
	}
	var extra, missing []string
	for h := range seen {
		if !table[h] {
			extra = append(extra, h.String())
		}
	}
	for h := range table {
		if !seen[h] {
			missing = append(missing, h.String())
		}
	}
	sort.Strings(extra)
	sort.Strings(missing)
	assert.Empty(t, extra, "hops the nodes send that Protocol lacks")
	assert.Empty(t, missing, "Protocol rows no run reached")
}

package workload

import (
	"bytes"
	"container/heap"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tracesDir returns the shared traces folder (PDEMU_TRACES, or
// ../shared/traces next to the repository root) or skips the test.
func tracesDir(t testing.TB, sub string) string {
	t.Helper()
	if d := os.Getenv("PDEMU_TRACES"); d != "" {
		p := filepath.Join(d, sub)
		if _, err := os.Stat(p); err != nil {
			t.Skipf("trace %s not found under PDEMU_TRACES=%s", sub, d)
		}
		return p
	}
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, "..", "shared", "traces", sub)
			if _, err := os.Stat(p); err != nil {
				t.Skipf("trace %s not found at %s (set PDEMU_TRACES to the traces folder)", sub, p)
			}
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skipf("repository root not found above the test directory; set PDEMU_TRACES to run trace %s", sub)
		}
		dir = parent
	}
}

// drain reads src to the end (t is a *testing.T or a *rapid.T).
func drain(t require.TestingT, src Source) []*Request {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	var out []*Request
	for {
		r, err := src.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		out = append(out, r)
	}
}

func openReader(t testing.TB, data, format string, opts LoadOptions) Source {
	t.Helper()
	src, err := OpenReader(strings.NewReader(data), "mem."+format, format, opts)
	require.NoError(t, err)
	return src
}

// --- in-memory trace generators (tests and benchmarks) ---

// genMooncake writes n Mooncake records: 10 groups sharing a 4-block prefix,
// then unique blocks (about 30 blocks per record).
func genMooncake(n int) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		k := 20 + i%20
		fmt.Fprintf(&b, `{"timestamp": %d, "input_length": %d, "output_length": %d, "hash_ids": [`, i*50, k*512-100, 1+i%300)
		g := i % 10
		for j := 0; j < k; j++ {
			if j > 0 {
				b.WriteByte(',')
			}
			if j < 4 {
				fmt.Fprintf(&b, "%d", g*4+j)
			} else {
				fmt.Fprintf(&b, "%d", 1000000+i*64+j)
			}
		}
		b.WriteString("]}\n")
	}
	return b.Bytes()
}

// genBailian writes n Bailian records in conversations of 5 turns.
func genBailian(n int) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		parent := i - 1
		if i%5 == 0 {
			parent = -1
		}
		turn := i%5 + 1
		in := 200 * turn
		fmt.Fprintf(&b, `{"chat_id": %d, "parent_chat_id": %d, "timestamp": %.3f, "input_length": %d, "output_length": 40, "type": "text", "turn": %d, "hash_ids": [`,
			i, parent, float64(i)*0.25, in, turn)
		conv := i / 5
		for j := 0; j < in/16; j++ {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%d", conv*1000+j)
		}
		b.WriteString("]}\n")
	}
	return b.Bytes()
}

// genAzure writes an Azure CSV of n rows.
func genAzure(n int) []byte {
	var b bytes.Buffer
	b.WriteString("TIMESTAMP,ContextTokens,GeneratedTokens\n")
	t0 := time.Date(2023, 11, 16, 18, 17, 3, 979960000, time.UTC)
	for i := 0; i < n; i++ {
		ts := t0.Add(time.Duration(i) * 37 * time.Millisecond)
		fmt.Fprintf(&b, "%s,%d,%d\n", ts.Format("2006-01-02 15:04:05.0000000"), 100+(i*7919)%4000, 1+(i*31)%300)
	}
	return b.Bytes()
}

// genTraceLab writes n TraceLab rounds in sessions of 10: each round's
// cached prefix is the previous prompt, 1500 tokens are new, and rounds
// arrive 20 s apart with 8 s of output events.
func genTraceLab(n int) []byte {
	var b bytes.Buffer
	t0 := time.Date(2026, 6, 1, 5, 40, 20, 0, time.UTC)
	for i := 0; i < n; i++ {
		s, r := i/10, i%10
		in := 10000 + 1500*r
		prefix := 0
		if r > 0 {
			prefix = in - 1500
		}
		at := t0.Add(time.Duration(s)*time.Hour + time.Duration(r)*20*time.Second)
		fmt.Fprintf(&b, `{"provider":"claude","session_id":"claude:s%d","round_index":%d,"model":"m","input_tokens_total":%d,"prefix_tokens":%d,"newly_append_tokens":%d,"output_tokens":100,"timing_events":[{"event_type":"tool_result","timestamp":"%s"},{"event_type":"text","timestamp":"%s"}],"tools":[]}`+"\n",
			s, r, in, prefix, in-prefix, at.Format(time.RFC3339Nano), at.Add(8*time.Second).Format(time.RFC3339Nano))
	}
	return b.Bytes()
}

// genClaudeCode writes one Claude Code session document with n main-agent
// requests and a 3-request subagent after the first.
func genClaudeCode(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"id":"trace_mem","models":["m"],"block_size":64,"hash_id_scope":"local","tool_tokens":1000,"system_tokens":300,"requests":[`)
	req := func(t float64, in, out int, firstID, think int) {
		fmt.Fprintf(&b, `{"t":%.1f,"type":"n","model":"m","in":%d,"out":%d,"hash_ids":[`, t, in, out)
		for j := 0; j < in/64; j++ {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%d", firstID+j)
		}
		fmt.Fprintf(&b, `],"input_types":["tool_result"],"output_types":["text"],"stop":"tool_use","api_time":2.5,"think_time":%d}`, think)
	}
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		req(float64(i)*10, 2000+300*i, 100, 1, 7)
		if i == 0 {
			b.WriteString(`,{"t":5.5,"type":"subagent","agent_id":"agent_001","tool_tokens":500,"system_tokens":100,"requests":[`)
			for k := 0; k < 3; k++ {
				if k > 0 {
					b.WriteByte(',')
				}
				req(float64(k)*3, 700+200*k, 50, 1<<20, 1)
			}
			b.WriteString(`]}`)
		}
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// --- driver replay simulation ---

type relItem struct {
	Release
	seq int
}

type relHeap []relItem

func (h relHeap) Len() int { return len(h) }
func (h relHeap) Less(i, j int) bool {
	if h[i].At != h[j].At {
		return h[i].At < h[j].At
	}
	return h[i].seq < h[j].seq
}
func (h relHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *relHeap) Push(x any)   { *h = append(*h, x.(relItem)) }
func (h *relHeap) Pop() any     { o := *h; x := o[len(o)-1]; *h = o[:len(o)-1]; return x }

// replay drives src through the Driver, releasing each request when due and
// ending it immediately; it returns how often each ID was released.
func replay(t testing.TB, src Source, closed bool) map[int64]int {
	t.Helper()
	d := NewDriver(src, closed)
	var q relHeap
	seq := 0
	add := func(err error, now time.Duration) {
		t.Helper()
		require.NoError(t, err)
		for _, r := range d.Ready().Out {
			require.NotNil(t, r.Req)
			require.GreaterOrEqual(t, r.At, now, "release scheduled in the past")
			seq++
			heap.Push(&q, relItem{r, seq})
		}
	}
	add(d.Start(0), 0)
	count := map[int64]int{}
	for q.Len() > 0 {
		it := heap.Pop(&q).(relItem)
		now := it.At
		if !closed {
			require.GreaterOrEqual(t, now, it.Req.Arrival)
		}
		count[it.Req.ID]++
		add(d.Released(it.Req, now), now)
		add(d.Ended(it.Req, now), now)
	}
	require.True(t, d.Done(), "driver not done: read %d", d.Read())
	require.Len(t, count, d.Read())
	for id := int64(0); id < int64(d.Read()); id++ {
		require.Equal(t, 1, count[id], "request %d released %d times", id, count[id])
	}
	return count
}

package workload

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMooncakeShippedStats(t *testing.T) {
	path := tracesDir(t, "mooncake/synthetic_trace.jsonl")
	src, err := Open(path, "", LoadOptions{})
	require.NoError(t, err)
	defer src.(io.Closer).Close()
	st, err := ComputeStats(src)
	require.NoError(t, err)
	require.Equal(t, 3993, st.Requests)
	require.Equal(t, 3993, st.Sessions)
	require.InDelta(t, 15325, st.Input.Mean, 1)
	require.InDelta(t, 149, st.Output.Mean, 0.5)
	require.InDelta(t, 0.640, st.IdealReuse, 0.001)
	require.Equal(t, 512, st.BlockTokens)
	require.Zero(t, st.MisplacedBlocks)
	require.Zero(t, src.(Skipper).Skipped())
	var b strings.Builder
	st.Write(&b)
	t.Logf("mooncake:\n%s", b.String())

	// FullBlocks drops the partial last block of each request.
	src, err = Open(path, FormatMooncake, LoadOptions{FullBlocks: true})
	require.NoError(t, err)
	defer src.(io.Closer).Close()
	st, err = ComputeStats(src)
	require.NoError(t, err)
	require.InDelta(t, 0.659, st.IdealReuse, 0.001)
}

func TestShippedTracesValidate(t *testing.T) {
	for _, tc := range []struct {
		path, format      string
		requests, session int
	}{
		{"azure-2023/AzureLLMInferenceTrace_code.csv", FormatAzure, 8819, 8819},
		{"tracelab/round_trace.sanitized.jsonl", FormatTraceLab, 19, 2},
		{"weka-claude-code", FormatClaudeCode, 2806, 43},
	} {
		t.Run(tc.format, func(t *testing.T) {
			path := tracesDir(t, tc.path)
			f, err := Detect(path)
			require.NoError(t, err)
			require.Equal(t, tc.format, f)
			for _, share := range []bool{false, true} {
				src, err := Open(path, "", LoadOptions{ShareSystemPrefix: share})
				require.NoError(t, err)
				st, err := ComputeStats(src)
				require.NoError(t, err)
				require.NoError(t, src.(io.Closer).Close())
				require.Equal(t, tc.requests, st.Requests)
				require.Equal(t, tc.session, st.Sessions)
				require.Zero(t, st.MisplacedBlocks)
				if !share {
					var b strings.Builder
					st.Write(&b)
					t.Logf("%s:\n%s", tc.path, b.String())
				}
			}
		})
	}
}

func TestClaudeCodeShipped(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the 27 MB claude-code trace three times; skipped under -short")
	}
	dir := tracesDir(t, "weka-claude-code")
	stats := func(o LoadOptions) Stats {
		src, err := OpenClaudeCode(dir, o)
		require.NoError(t, err)
		st, err := ComputeStats(src)
		require.NoError(t, err)
		return st
	}
	local, shared := stats(LoadOptions{}), stats(LoadOptions{ShareSystemPrefix: true})
	require.Equal(t, local.TotalBlocks, shared.TotalBlocks)
	require.Less(t, shared.UniqueBlocks, local.UniqueBlocks, "sharing the tools+system prefix must merge blocks across sessions")
	// Subagents are sessions of their own, named after the parent file.
	src, err := OpenClaudeCode(dir, LoadOptions{MaxConcurrent: 4})
	require.NoError(t, err)
	reqs := drain(t, src)
	var sub *Request
	for _, r := range reqs {
		if strings.Contains(r.SessionName, "/agent_") {
			sub = r
			break
		}
	}
	require.NotNil(t, sub)
	require.Equal(t, 0, sub.Turn)
	require.True(t, strings.HasPrefix(sub.SessionName, "trace_0270/"), sub.SessionName)
}

func TestClaudeCodeSessionStarts(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 6; i++ {
		id := "trace_" + string(rune('a'+i))
		doc := bytes.Replace(genClaudeCode(4), []byte(`"trace_mem"`), []byte(`"`+id+`"`), 1)
		require.NoError(t, os.WriteFile(filepath.Join(dir, id+".json"), doc, 0o644))
	}
	starts := func(o LoadOptions) map[string]time.Duration {
		src, err := Open(dir, "", o)
		require.NoError(t, err)
		out := map[string]time.Duration{}
		for _, r := range drain(t, src) {
			if r.Turn == 0 {
				out[r.SessionName] = r.Arrival
			}
		}
		return out
	}
	// All at 0: every main agent starts at 0, its subagent at 5.5 s.
	all := starts(LoadOptions{})
	require.Len(t, all, 12)
	for name, at := range all {
		if strings.Contains(name, "/agent_") {
			require.Equal(t, 5500*time.Millisecond, at, name)
		} else {
			require.Zero(t, at, name)
		}
	}
	// Poisson: increasing starts in file order, deterministic per seed.
	p1, p2 := starts(LoadOptions{SessionRate: 0.1, Seed: 7}), starts(LoadOptions{SessionRate: 0.1, Seed: 7})
	require.Equal(t, p1, p2)
	require.Zero(t, p1["trace_a"])
	for i := 1; i < 6; i++ {
		a, b := string(rune('a'+i-1)), string(rune('a'+i))
		require.LessOrEqual(t, p1["trace_"+a], p1["trace_"+b])
		require.Equal(t, p1["trace_"+b]+5500*time.Millisecond, p1["trace_"+b+"/agent_001"])
	}
	require.NotEqual(t, p1, starts(LoadOptions{SessionRate: 0.1, Seed: 8}))
	// Staggered: with 2 slots, a session starts when an earlier one ends;
	// each lasts 30 s + 2.5 s of api time.
	st := starts(LoadOptions{MaxConcurrent: 2})
	d := 32500 * time.Millisecond
	for i, want := range []time.Duration{0, 0, d, d, 2 * d, 2 * d} {
		require.Equal(t, want, st["trace_"+string(rune('a'+i))], i)
	}
}

func TestClaudeCodeBlocksAndAppend(t *testing.T) {
	src := openReader(t, string(genClaudeCode(3)), FormatClaudeCode, LoadOptions{})
	reqs := drain(t, src)
	require.Len(t, reqs, 6)
	require.Equal(t, "trace_mem", reqs[0].SessionName)
	require.Equal(t, "trace_mem/agent_001", reqs[1].SessionName)
	require.Equal(t, 5500*time.Millisecond, reqs[1].Arrival)
	var main []*Request
	for _, r := range reqs {
		if r.Session == 0 {
			main = append(main, r)
		}
	}
	require.Len(t, main, 3)
	for i := 1; i < 3; i++ {
		prev, cur := main[i-1], main[i]
		// The prompt extends the previous one: all its blocks are shared.
		require.Equal(t, prev.Blocks, cur.Blocks[:len(prev.Blocks)])
		require.Equal(t, cur.InputLen-prev.InputLen-prev.OutputLen, cur.AppendLen)
		require.Equal(t, 7*time.Second, cur.Think)
	}
	require.Equal(t, time.Duration(0), main[0].Think)
	require.Equal(t, main[0].InputLen, main[0].AppendLen)
	// Local ids 1.. are salted per file: main and subagent do not collide
	// even though ids overlap in value ranges.
	require.NotEqual(t, main[0].Blocks[0], reqs[1].Blocks[0])
}

func TestClaudeCodeShareSystemPrefix(t *testing.T) {
	dir := t.TempDir()
	doc := genClaudeCode(2)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trace_1.json"), doc, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trace_2.json"), bytes.Replace(doc, []byte(`"trace_mem"`), []byte(`"trace_other"`), 1), 0o644))
	first := func(o LoadOptions) (a, b *Request) {
		src, err := Open(dir, FormatClaudeCode, o)
		require.NoError(t, err)
		for _, r := range drain(t, src) {
			if r.Turn == 0 && r.SessionName == "trace_mem" {
				a = r
			}
			if r.Turn == 0 && r.SessionName == "trace_other" {
				b = r
			}
		}
		return a, b
	}
	a, b := first(LoadOptions{})
	require.NotEqual(t, a.Blocks[0], b.Blocks[0], "session-local ids must not be shared by default")
	a, b = first(LoadOptions{ShareSystemPrefix: true})
	k := (1000 + 300 + 63) / 64 // ceil((tool+system)/64)
	require.Equal(t, a.Blocks[:k], b.Blocks[:k])
	require.NotEqual(t, a.Blocks[k], b.Blocks[k])
}

func TestBailianTestdata(t *testing.T) {
	src, err := Open(filepath.Join("testdata", "bailian_small.jsonl"), "", LoadOptions{})
	require.NoError(t, err)
	defer src.(io.Closer).Close()
	reqs := drain(t, src)
	require.Len(t, reqs, 6)
	type want struct {
		sess   int32
		name   string
		turn   int
		at     time.Duration
		think  time.Duration
		append int
	}
	for i, w := range []want{
		{0, "1", 0, 0, 0, 100},
		{1, "2", 0, 500 * time.Millisecond, 0, 40},
		{0, "1", 1, 5 * time.Second, 4600 * time.Millisecond, 30},  // 150 − (100+20)
		{0, "1", 2, 10 * time.Second, 4800 * time.Millisecond, 40}, // 200 − (150+10)
		{2, "5", 0, 11 * time.Second, 0, 16},                       // orphan: parent 99 unknown
		{0, "1", 3, 12 * time.Second, 6800 * time.Millisecond, 10}, // branch from chat 3: 170 − 160
	} {
		r := reqs[i]
		require.Equal(t, int64(i), r.ID)
		require.Equal(t, w.sess, r.Session, "request %d", i)
		require.Equal(t, w.name, r.SessionName, "request %d", i)
		require.Equal(t, w.turn, r.Turn, "request %d", i)
		require.Equal(t, w.at, r.Arrival, "request %d", i)
		require.Equal(t, w.think, r.Think, "request %d", i)
		require.Equal(t, w.append, r.AppendLen, "request %d", i)
		require.Equal(t, 16, r.BlockTokens)
	}
	require.Equal(t, 1, src.(*Bailian).Orphans())
}

func TestBailianSessionIdle(t *testing.T) {
	data := `{"chat_id": 1, "parent_chat_id": -1, "timestamp": 0, "input_length": 32, "output_length": 1, "type": "text", "turn": 1, "hash_ids": [1, 2]}
{"chat_id": 2, "parent_chat_id": 1, "timestamp": 7200, "input_length": 48, "output_length": 1, "type": "text", "turn": 2, "hash_ids": [1, 2, 3]}
`
	reqs := drain(t, openReader(t, data, FormatBailian, LoadOptions{}))
	require.Equal(t, int32(1), reqs[1].Session, "parent forgotten after the default 1 h idle")
	reqs = drain(t, openReader(t, data, FormatBailian, LoadOptions{SessionIdle: -1}))
	require.Equal(t, int32(0), reqs[1].Session)
	require.Equal(t, 1, reqs[1].Turn)
	require.Equal(t, 48-33, reqs[1].AppendLen)
}

func TestTraceLabShipped(t *testing.T) {
	path := tracesDir(t, "tracelab/round_trace.sanitized.jsonl")
	src, err := OpenTraceLab(path, LoadOptions{})
	require.NoError(t, err)
	reqs := drain(t, src)
	require.Len(t, reqs, 19)
	byName := map[string][]*Request{}
	for _, r := range reqs {
		byName[r.SessionName] = append(byName[r.SessionName], r)
	}
	claude := byName["claude:92ee5b8a-429c-e80b-5db6-5381512f4697"]
	require.Len(t, claude, 10)
	require.Zero(t, claude[0].Arrival)
	// Round 1 arrives with its last tool result (05:40:50.938); round 0's
	// last event was at 05:40:31.647.
	require.Equal(t, 30787*time.Millisecond, claude[1].Arrival)
	require.Equal(t, 19291*time.Millisecond, claude[1].Think)
	require.Equal(t, 6360, claude[1].AppendLen) // newly_append_tokens
	// Round 1 shares floor(prefix_tokens/16) blocks with round 0.
	k := 29380 / 16
	require.Equal(t, claude[0].Blocks[:k], claude[1].Blocks[:k])
	require.NotEqual(t, claude[0].Blocks[k], claude[1].Blocks[k])
	// Round 2's cached prefix (35738 of round 1's 35740) covers all of
	// round 1's full blocks.
	require.Equal(t, 35738/16, len(claude[1].Blocks))
	require.Equal(t, claude[1].Blocks, claude[2].Blocks[:len(claude[1].Blocks)])
	codex := byName["codex:a611041f-625d-6fad-5e59-845850dc6543"]
	require.Len(t, codex, 9)
	// Round 3's cached prefix fell to 3456 tokens: only 216 blocks shared.
	require.Equal(t, codex[2].Blocks[:216], codex[3].Blocks[:216])
	require.NotEqual(t, codex[2].Blocks[216], codex[3].Blocks[216])
	require.Equal(t, 6696, codex[3].AppendLen)

	// TraceTime keeps the wall clock: codex (March) starts first.
	src, err = OpenTraceLab(path, LoadOptions{TraceTime: true})
	require.NoError(t, err)
	reqs = drain(t, src)
	require.True(t, strings.HasPrefix(reqs[0].SessionName, "codex:"))
	require.Greater(t, reqs[len(reqs)-1].Arrival, 24*time.Hour*60)
}

func TestTraceLabSynthetic(t *testing.T) {
	reqs := drain(t, openReader(t, string(genTraceLab(30)), "", LoadOptions{BlockTokens: 24, ShareSystemPrefix: true}))
	require.Len(t, reqs, 30)
	for _, r := range reqs {
		require.Equal(t, 24, r.BlockTokens)
		require.Len(t, r.Blocks, r.InputLen/24)
		if r.Turn > 0 {
			require.Equal(t, 1500, r.AppendLen)
			require.Equal(t, 12*time.Second, r.Think) // 20 s between rounds − 8 s of output events
		}
	}
}

func TestAzureSynthetic(t *testing.T) {
	reqs := drain(t, openReader(t, string(genAzure(50)), "", LoadOptions{}))
	require.Len(t, reqs, 50)
	seen := map[uint64]bool{}
	for i, r := range reqs {
		require.Equal(t, int32(i), r.Session)
		require.Equal(t, time.Duration(i)*37*time.Millisecond, r.Arrival)
		require.Len(t, r.Blocks, r.InputLen/16)
		for _, h := range r.Blocks {
			require.False(t, seen[h], "azure blocks must be unique")
			seen[h] = true
		}
	}
	// Columns in another order, extra columns, RFC 3339 and blank lines.
	data := "GeneratedTokens,Foo,ContextTokens,TIMESTAMP\n5,x,100,2024-05-10T00:00:00Z\n\n0,y,32,2024-05-10T00:00:01.5Z\n"
	reqs = drain(t, openReader(t, data, FormatAzure, LoadOptions{BlockTokens: 32}))
	require.Len(t, reqs, 2)
	require.Equal(t, 1500*time.Millisecond, reqs[1].Arrival)
	require.Equal(t, 1, reqs[1].OutputLen, "a zero output is raised to 1")
	require.Len(t, reqs[0].Blocks, 3)
}

func TestMooncakeSessionFields(t *testing.T) {
	data := `{"timestamp": 0, "input_length": 50, "output_length": 10, "hash_ids": [1, 2], "session_id": "a", "turn": 0}
{"timestamp": 1.5, "input_length": 30, "output_length": 10, "hash_ids": [9], "session_id": 7}
{"timestamp": 1000, "input_length": 90, "output_length": 10, "hash_ids": [1, 2, 3], "session_id": "a", "turn": 1, "think_ms": 250, "block_tokens": 24}
{"timestamp": 2000, "input_length": 100, "output_length": 10, "hash_ids": [1, 2, 3, 4], "session_id": "a", "turn": 2, "block_tokens": 24}
`
	reqs := drain(t, openReader(t, data, "", LoadOptions{BlockTokens: 24}))
	require.Len(t, reqs, 4)
	require.Equal(t, []int32{0, 1, 0, 0}, []int32{reqs[0].Session, reqs[1].Session, reqs[2].Session, reqs[3].Session})
	require.Equal(t, "7", reqs[1].SessionName)
	require.Equal(t, 1500*time.Microsecond, reqs[1].Arrival)
	require.Equal(t, 2, reqs[3].Turn)
	require.Equal(t, 250*time.Millisecond, reqs[2].Think)
	require.Equal(t, 30, reqs[2].AppendLen) // 90 − (50+10)
	// No think_ms: gap − 20 ms per predecessor output token.
	require.Equal(t, time.Second-200*time.Millisecond, reqs[3].Think)
	require.Equal(t, 0, reqs[3].AppendLen) // 100 < 90+10: nothing new

	// A turn that goes backwards is a bad record.
	bad := data + `{"timestamp": 3000, "input_length": 10, "output_length": 1, "hash_ids": [], "session_id": "a", "turn": 1}` + "\n"
	err := drainErr(openReader(t, bad, FormatMooncake, LoadOptions{BlockTokens: 24}))
	require.ErrorContains(t, err, `mem.mooncake:5: field "turn": 1 does not follow turn 2 of session "a"`)
}

// drainErr drains src and returns the error that stopped it (nil at EOF).
func drainErr(src Source) error {
	for {
		_, err := src.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func TestMooncakeInferSessions(t *testing.T) {
	data := `{"timestamp": 0, "input_length": 1100, "output_length": 10, "hash_ids": [1, 2, 3]}
{"timestamp": 10, "input_length": 600, "output_length": 10, "hash_ids": [7, 8]}
{"timestamp": 20, "input_length": 1600, "output_length": 10, "hash_ids": [1, 2, 4, 5]}
{"timestamp": 30, "input_length": 1600, "output_length": 10, "hash_ids": [1, 2, 6, 10]}
{"timestamp": 40, "input_length": 2100, "output_length": 10, "hash_ids": [1, 2, 4, 5, 9]}
`
	reqs := drain(t, openReader(t, data, FormatMooncake, LoadOptions{}))
	require.Equal(t, int32(4), reqs[4].Session)
	reqs = drain(t, openReader(t, data, FormatMooncake, LoadOptions{InferSessions: true}))
	// 2 extends 0 (blocks 1,2 = its full prompt), 4 extends 2 (1,2,4); 3
	// extends 0's prompt too, but that session moved on: a new session.
	require.Equal(t, []int32{0, 1, 0, 2, 0}, []int32{reqs[0].Session, reqs[1].Session, reqs[2].Session, reqs[3].Session, reqs[4].Session})
	require.Equal(t, []int{0, 0, 1, 0, 2}, []int{reqs[0].Turn, reqs[1].Turn, reqs[2].Turn, reqs[3].Turn, reqs[4].Turn})
	require.Equal(t, 1600-1110, reqs[2].AppendLen)
}

func TestReorderWindow(t *testing.T) {
	data := `{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}
{"timestamp": 500, "input_length": 10, "output_length": 1, "hash_ids": [2]}
{"timestamp": 300, "input_length": 10, "output_length": 1, "hash_ids": [3]}
{"timestamp": 2000, "input_length": 10, "output_length": 1, "hash_ids": [4]}
{"timestamp": 100, "input_length": 10, "output_length": 1, "hash_ids": [5]}
`
	err := drainErr(openReader(t, data, FormatMooncake, LoadOptions{}))
	require.ErrorContains(t, err, `mem.mooncake:3: field "timestamp": 300 ms is earlier than an already emitted record`)
	src := openReader(t, data, FormatMooncake, LoadOptions{ReorderWindow: time.Second, SkipBad: true})
	reqs := drain(t, src)
	var got []uint64
	for _, r := range reqs {
		got = append(got, r.Blocks[0])
	}
	require.Equal(t, []uint64{1, 3, 2, 4}, got) // 5 came 1.9 s late: dropped
	require.Equal(t, 1, src.(Skipper).Skipped())
}

func TestBadRecords(t *testing.T) {
	for _, tc := range []struct {
		format, data, want string
	}{
		{FormatMooncake, `{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": []}` + "\n" + `{"timestamp": 1, "input_length": "x", "output_length": 1, "hash_ids": []}`,
			`mem.mooncake:2: field "input_length": cannot use JSON string as float64`},
		{FormatMooncake, `{"timestamp": 1, "input_length": -5, "output_length": 1, "hash_ids": []}`,
			`mem.mooncake:1: field "input_length": -5 out of range`},
		{FormatMooncake, `{"timestamp": 1, "input_length": 5, "hash_ids": []}`,
			`mem.mooncake:1: field "output_length": missing`},
		{FormatMooncake, `{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1, 2]}`,
			`mem.mooncake:1: field "hash_ids": 2 blocks of 512 tokens exceed the 5-token prompt`},
		{FormatMooncake, `{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [-1]}`,
			`mem.mooncake:1: field "hash_ids": element 0 (-1) is not an unsigned 64-bit integer`},
		{FormatMooncake, `{"timestamp": 1, "input_length": 5.5, "output_length": 1, "hash_ids": []}`,
			`mem.mooncake:1: field "input_length": 5.5 is not an integer`},
		{FormatMooncake, `not json`, `mem.mooncake:1: invalid character`},
		{FormatBailian, `{"parent_chat_id": -1, "timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": []}`,
			`mem.bailian:1: field "chat_id": missing`},
		{FormatBailian, `{"chat_id": [1], "timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": []}`,
			`mem.bailian:1: field "chat_id": must be a string or a number`},
		{FormatAzure, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.97,12,3\n2023-11-16 18:17:04,abc,3\n",
			`mem.azure:3: field "ContextTokens": "abc" is not an integer`},
		{FormatAzure, "TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,12,3\n",
			`mem.azure:2: field "TIMESTAMP": "yesterday" is not a timestamp`},
		{FormatAzure, "TIMESTAMP,Context,GeneratedTokens\n", `mem.azure:1: header has no "ContextTokens" column`},
		{FormatTraceLab, `{"session_id": "a", "round_index": 0, "input_tokens_total": 10, "prefix_tokens": 20, "output_tokens": 1}`,
			`mem.tracelab:1: field "prefix_tokens": 20 exceeds input_tokens_total 10`},
		{FormatTraceLab, `{"session_id": "a", "round_index": 0, "input_tokens_total": 10, "prefix_tokens": 2, "output_tokens": 1}` + "\n" +
			`{"session_id": "a", "round_index": 0, "input_tokens_total": 10, "prefix_tokens": 2, "output_tokens": 1}`,
			`mem.tracelab:2: field "round_index": duplicate round 0 of session "a"`},
		{FormatClaudeCode, `{"id": "x", "block_size": 64, "requests": [{"t": 0, "in": 100, "out": 1, "hash_ids": [1]}, {"t": 1, "in": "big", "out": 1, "hash_ids": [1]}]}`,
			`mem.claude-code: requests[1]: field "in": cannot use JSON string as float64`},
		{FormatClaudeCode, `{"id": "x", "requests": [{"t": 5, "in": 100, "out": 1, "hash_ids": [1]}, {"t": 1, "in": 100, "out": 1, "hash_ids": [1]}]}`,
			`mem.claude-code: requests[1]: field "t": 1 s is before the previous request (5 s)`},
		{FormatClaudeCode, `{"id": "x", "requests": [{"t": 0, "type": "subagent", "requests": [{"t": 0, "in": 10, "out": 1}]}]}`,
			`mem.claude-code: requests[0].requests[0]: field "hash_ids": missing`},
		{FormatClaudeCode, `{"id": "x"}`, `mem.claude-code: field "requests": missing`},
	} {
		src, err := OpenReader(strings.NewReader(tc.data), "mem."+tc.format, tc.format, LoadOptions{})
		if err == nil {
			err = drainErr(src)
		}
		require.Error(t, err, tc.data)
		require.Contains(t, err.Error(), tc.want)
		if strings.Contains(tc.want, "field") {
			var re *RecordError
			require.True(t, errors.As(err, &re), "%T", err)
		}
		// With SkipBad the bad record is skipped and counted.
		src, err = OpenReader(strings.NewReader(tc.data), "mem."+tc.format, tc.format, LoadOptions{SkipBad: true})
		if err != nil {
			require.Contains(t, err.Error(), "header") // a CSV without its columns cannot be skipped
			continue
		}
		require.NoError(t, drainErr(src), tc.data)
		require.GreaterOrEqual(t, src.(Skipper).Skipped(), 1, tc.data)
	}
}

func TestOpenDetectAndUnknown(t *testing.T) {
	_, err := Open("x", "parquet", LoadOptions{})
	require.ErrorContains(t, err, `unknown trace format "parquet" (known formats: azure, bailian, claude-code, mooncake, tracelab)`)
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o644))
		return p
	}
	for want, path := range map[string]string{
		FormatMooncake:   write("m.jsonl", genMooncake(3)),
		FormatBailian:    write("b.jsonl", genBailian(3)),
		FormatAzure:      write("a.csv", genAzure(3)),
		FormatTraceLab:   write("t.jsonl", genTraceLab(3)),
		FormatClaudeCode: write("c.json", genClaudeCode(3)),
	} {
		got, err := Detect(path)
		require.NoError(t, err)
		require.Equal(t, want, got, path)
		src, err := Open(path, "", LoadOptions{})
		require.NoError(t, err)
		require.NotEmpty(t, drain(t, src))
		require.NoError(t, src.(io.Closer).Close())
	}
	_, err = Detect(write("x.jsonl", []byte(`{"foo": 1}`)))
	require.ErrorContains(t, err, "known formats: azure, bailian")
	_, err = Detect(t.TempDir())
	require.ErrorContains(t, err, "no trace_*.json")
	_, err = Open(filepath.Join(dir, "missing.jsonl"), FormatMooncake, LoadOptions{})
	require.Error(t, err)
	_, err = Open(dir, FormatMooncake, LoadOptions{SessionRate: 1, MaxConcurrent: 2})
	require.ErrorContains(t, err, "at most one")
}

func TestMaxRequests(t *testing.T) {
	for _, format := range Formats() {
		var data []byte
		switch format {
		case FormatMooncake:
			data = genMooncake(20)
		case FormatBailian:
			data = genBailian(20)
		case FormatAzure:
			data = genAzure(20)
		case FormatTraceLab:
			data = genTraceLab(20)
		case FormatClaudeCode:
			data = genClaudeCode(20)
		}
		reqs := drain(t, openReader(t, string(data), format, LoadOptions{MaxRequests: 7}))
		require.Len(t, reqs, 7, format)
	}
}

package workload

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// genRequests draws a request sequence that satisfies the Source contract
// and whose sessions' block lists relate in every way a turn can: extend
// the previous turn, repeat it, keep a prefix and diverge, keep only a
// prefix, start over, be empty.
func genRequests(t *rapid.T) []*Request {
	const bt = 16
	n := rapid.IntRange(0, 60).Draw(t, "n")
	var reqs []*Request
	type sess struct {
		idx    int32
		turn   int
		blocks []uint64
		done   bool
	}
	var sessions []*sess
	at := time.Duration(0)
	next := uint64(1)
	fresh := func(k int) []uint64 {
		out := make([]uint64, k)
		for i := range out {
			out[i] = next
			next++
		}
		return out
	}
	for i := 0; i < n; i++ {
		if i > 0 { // the loader rebases arrivals to the first
			at += time.Duration(rapid.IntRange(0, 3000).Draw(t, "gap")) * time.Millisecond / 7
		}
		var s *sess
		live := slices.DeleteFunc(slices.Clone(sessions), func(s *sess) bool { return s.done })
		if len(live) == 0 || rapid.IntRange(0, 3).Draw(t, "new") == 0 {
			s = &sess{idx: int32(len(sessions))}
			sessions = append(sessions, s)
		} else {
			s = live[rapid.IntRange(0, len(live)-1).Draw(t, "pick")]
		}
		var blocks []uint64
		p := s.blocks
		switch rapid.IntRange(0, 5).Draw(t, "shape") {
		case 0: // extend
			blocks = append(slices.Clone(p), fresh(rapid.IntRange(0, 5).Draw(t, "k"))...)
		case 1: // repeat
			blocks = slices.Clone(p)
		case 2: // keep a prefix, diverge
			k := rapid.IntRange(0, len(p)).Draw(t, "keep")
			blocks = append(slices.Clone(p[:k]), fresh(rapid.IntRange(1, 4).Draw(t, "k"))...)
		case 3: // only a prefix
			blocks = slices.Clone(p[:rapid.IntRange(0, len(p)).Draw(t, "keep")])
		case 4: // start over
			blocks = fresh(rapid.IntRange(0, 6).Draw(t, "k"))
		default:
			blocks = []uint64{}
		}
		// Values that exceed 2^53 and 0 round-trip too.
		if len(blocks) > 0 && rapid.Bool().Draw(t, "big") {
			blocks[len(blocks)-1] = rapid.Uint64().Draw(t, "id")
		}
		in := len(blocks)*bt + rapid.IntRange(0, bt).Draw(t, "extra")
		last := rapid.IntRange(0, 4).Draw(t, "last") == 0
		if blocks == nil {
			blocks = []uint64{}
		}
		think := time.Duration(rapid.IntRange(0, 5000).Draw(t, "think")) * time.Millisecond
		app := rapid.IntRange(0, in).Draw(t, "append")
		if s.turn == 0 {
			think, app = 0, in
		}
		reqs = append(reqs, &Request{
			ID: int64(i), Session: s.idx, SessionName: "s" + string(rune('a'+s.idx%26)), Turn: s.turn,
			Arrival: at, Think: think,
			InputLen: in, OutputLen: rapid.IntRange(1, 50).Draw(t, "out"),
			Blocks: blocks, BlockTokens: bt, AppendLen: app, Last: last,
		})
		s.turn++
		s.blocks = blocks
		s.done = last
	}
	return reqs
}

func loadBytes(t require.TestingT, data []byte, opts LoadOptions) []*Request {
	src, err := OpenReader(bytes.NewReader(data), "mem.jsonl", FormatMooncake, opts)
	require.NoError(t, err)
	return drain(t, src)
}

// writeBoth writes src's requests in the full and the compact form.
func writeBoth(t require.TestingT, reqs []*Request) (full, compact []byte) {
	var f, c bytes.Buffer
	require.NoError(t, WriteJSONL(&f, &sliceSource{reqs: slices.Clone(reqs)}))
	require.NoError(t, WriteCompactJSONL(&c, &sliceSource{reqs: slices.Clone(reqs)}))
	return f.Bytes(), c.Bytes()
}

// Round trip: source → compact → load gives the same requests as source →
// full → load, which are the source's own, whatever the relation between a
// session's turns; and loading never rewrites a block an emitted request
// holds (the shared arrays are append-only).
func TestCompactRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		reqs := genRequests(t)
		full, compact := writeBoth(t, reqs)
		for _, opts := range []LoadOptions{{}, {FullBlocks: true}, {SessionIdle: time.Second}, {ReorderWindow: time.Second}} {
			a := loadBytes(t, full, opts)
			b := loadBytes(t, compact, opts)
			require.Equal(t, a, b, "%+v", opts)
			if opts == (LoadOptions{}) {
				require.Equal(t, reqs, a, "full round trip")
			}
		}
		// Append-only: snapshot every request's blocks as emitted.
		src, err := OpenReader(bytes.NewReader(compact), "mem.jsonl", FormatMooncake, LoadOptions{})
		require.NoError(t, err)
		var got []*Request
		var snaps [][]uint64
		for {
			r, err := src.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
			require.Equal(t, len(r.Blocks), cap(r.Blocks), "cap == len: no holder can append into a shared array")
			got = append(got, r)
			snaps = append(snaps, slices.Clone(r.Blocks))
		}
		for i, r := range got {
			require.Equal(t, snaps[i], r.Blocks, "request %d's blocks changed after it was emitted", i)
		}
	})
}

// The generators' exports: compact and full load the same requests.
func TestCompactGenerators(t *testing.T) {
	sw, err := NewSWEBench(SWEBenchConfig{Sessions: 6, Requests: 300}, 7)
	require.NoError(t, err)
	swReqs := drain(t, sw)
	ag, err := NewAgentic(AgenticConfig{Sessions: 8, Turns: 6}, 3, 0)
	require.NoError(t, err)
	agReqs := drain(t, ag)
	for name, reqs := range map[string][]*Request{"swebench": swReqs, "agentic": agReqs} {
		full, compact := writeBoth(t, reqs)
		a, b := loadBytes(t, full, LoadOptions{}), loadBytes(t, compact, LoadOptions{})
		require.Equal(t, a, b, name)
		assert.Less(t, len(compact)*3, len(full), "%s: compact %d bytes vs full %d", name, len(compact), len(full))
		// Interning: a session's turns share one backing array, as the
		// generators' own requests do.
		shared := 0
		prev := map[int32]*Request{}
		for _, r := range b {
			if p := prev[r.Session]; p != nil && len(p.Blocks) > 0 && len(r.Blocks) > len(p.Blocks) && &r.Blocks[0] == &p.Blocks[0] {
				shared++
			}
			prev[r.Session] = r
		}
		assert.Positive(t, shared, name)
		for _, data := range [][]byte{full, compact} {
			format, err := detectReader(bufioReader(data))
			require.NoError(t, err)
			assert.Equal(t, FormatMooncake, format)
		}
	}
}

// Compact lines that cannot be resolved are bad records with their own
// messages; with SkipBad, the lines that depend on a skipped line are
// skipped too instead of resolving against an older line.
func TestCompactErrors(t *testing.T) {
	const head = `{"timestamp": 0, "input_length": 64, "output_length": 1, "session_id": "s", "prefix_blocks": 0, "new_hash_ids": [1, 2, 3]}` + "\n"
	line := func(extra string) string {
		return `{"timestamp": 1, "input_length": 64, "output_length": 1, ` + extra + "}\n"
	}
	for _, tc := range []struct{ data, want string }{
		{head + line(`"session_id": "s", "prefix_blocks": 4, "new_hash_ids": []`), `mem.jsonl:2: field "prefix_blocks": 4 exceeds the 3 blocks of the previous line of session "s"`},
		{head + line(`"session_id": "t", "prefix_blocks": 1, "new_hash_ids": []`), `mem.jsonl:2: field "prefix_blocks": 1 refers to the previous line of session "t", but there is none (or it was marked last)`},
		{head + line(`"prefix_blocks": 1, "new_hash_ids": []`), `mem.jsonl:2: field "prefix_blocks": 1 needs a session_id`},
		{head + line(`"session_id": "s", "prefix_blocks": 3, "new_hash_ids": [4, 5]`), `mem.jsonl:2: field "new_hash_ids": 5 blocks of 16 tokens exceed the 64-token prompt`},
		{head + line(`"session_id": "s", "hash_ids": [1], "prefix_blocks": 3, "new_hash_ids": []`), `mem.jsonl:2: field "hash_ids": cannot be combined with prefix_blocks`},
		{head + line(`"session_id": "s", "prefix_blocks": 3`), `mem.jsonl:2: field "new_hash_ids": missing`},
		{head + line(`"session_id": "s", "new_hash_ids": [1]`), `mem.jsonl:2: field "prefix_blocks": missing`},
		{head + line(`"session_id": "s", "prefix_blocks": 1.5, "new_hash_ids": []`), `mem.jsonl:2: field "prefix_blocks": 1.5 is not an integer`},
		{head + line(`"session_id": "s", "prefix_blocks": 0, "new_hash_ids": [-1]`), `mem.jsonl:2: field "new_hash_ids": element 0 (-1) is not an unsigned 64-bit integer`},
	} {
		src, err := OpenReader(strings.NewReader(tc.data), "mem.jsonl", "", LoadOptions{BlockTokens: 16})
		require.NoError(t, err)
		err = drainErr(src)
		require.Error(t, err, tc.data)
		assert.Contains(t, err.Error(), tc.want)
	}

	// SkipBad: line 2 is bad; line 3 refers to it and is skipped as well;
	// line 4 restarts the session (prefix 0) and line 5 extends it.
	data := head +
		line(`"session_id": "s", "prefix_blocks": 3, "new_hash_ids": [4], "turn": "x"`) +
		line(`"session_id": "s", "prefix_blocks": 2, "new_hash_ids": []`) +
		line(`"session_id": "s", "prefix_blocks": 0, "new_hash_ids": [7]`) +
		line(`"session_id": "s", "prefix_blocks": 1, "new_hash_ids": [8]`) +
		"garbage\n" +
		line(`"session_id": "s", "prefix_blocks": 1, "new_hash_ids": [9]`)
	src, err := OpenReader(strings.NewReader(data), "mem.jsonl", "", LoadOptions{BlockTokens: 16, SkipBad: true})
	require.NoError(t, err)
	reqs := drain(t, src)
	require.Len(t, reqs, 3)
	assert.Equal(t, []uint64{1, 2, 3}, reqs[0].Blocks)
	assert.Equal(t, []uint64{7}, reqs[1].Blocks)
	assert.Equal(t, []uint64{7, 8}, reqs[2].Blocks)
	assert.Equal(t, 4, src.(Skipper).Skipped(), "the bad line, its dependant, the garbage line and the line after it")
}

func bufioReader(data []byte) *bufio.Reader { return bufio.NewReaderSize(bytes.NewReader(data), 1<<20) }

// The example of docs/TRACES.md.
func TestCompactDocExample(t *testing.T) {
	data := `{"timestamp":0,"input_length":70,"output_length":5,"prefix_blocks":0,"new_hash_ids":[11,12],"session_id":0,"block_tokens":24}
{"timestamp":900,"input_length":130,"output_length":5,"prefix_blocks":2,"new_hash_ids":[13,14],"session_id":0,"block_tokens":24}
{"timestamp":950,"input_length":64,"output_length":5,"prefix_blocks":1,"new_hash_ids":[15],"session_id":0,"block_tokens":24,"last":true}
`
	reqs := loadBytes(t, []byte(data), LoadOptions{})
	require.Len(t, reqs, 3)
	assert.Equal(t, []uint64{11, 12}, reqs[0].Blocks)
	assert.Equal(t, []uint64{11, 12, 13, 14}, reqs[1].Blocks)
	assert.Equal(t, []uint64{11, 15}, reqs[2].Blocks)
	assert.True(t, reqs[2].Last)
}

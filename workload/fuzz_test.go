package workload

import (
	"bytes"
	"errors"
	"testing"
)

// fuzzSource checks the properties every loader must have on any input:
// never panic; whatever is emitted satisfies the Source contract; with
// SkipBad no record error surfaces at all.
func fuzzSource(t *testing.T, data []byte, format string, skip bool) {
	opts := LoadOptions{SkipBad: skip, ReorderWindow: 50 * 1e6, BlockTokens: 16}
	src, err := OpenReader(bytes.NewReader(data), "fuzz", format, opts)
	if err != nil {
		return // unreadable header / undetectable format
	}
	_, err = ComputeStats(Limit(src, 20000))
	if errors.Is(err, ErrContract) {
		t.Fatalf("contract violated: %v\ninput: %q", err, data)
	}
	if skip && err != nil {
		t.Fatalf("SkipBad still failed: %v\ninput: %q", err, data)
	}
	if !skip && err != nil {
		var re *RecordError
		if !errors.As(err, &re) {
			t.Fatalf("error is not a *RecordError: %T %v", err, err)
		}
	}
}

func addSeeds(f *testing.F, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
}

func FuzzMooncake(f *testing.F) {
	addSeeds(f,
		string(genMooncake(3)),
		`{"timestamp": 0, "input_length": 50, "output_length": 10, "hash_ids": [1, 2], "session_id": "a", "turn": 0}
{"timestamp": 1000, "input_length": 90, "output_length": 10, "hash_ids": [1, 2, 3], "session_id": "a", "turn": 1, "think_ms": 250, "append_length": 30, "block_tokens": 24}`,
		`{"timestamp": 5, "input_length": 10, "output_length": 1, "hash_ids": []}
{"timestamp": 1, "input_length": 10, "output_length": 1, "hash_ids": [3]}`,
		`{"timestamp": 1, "input_length": -5, "output_length": 0, "hash_ids": [18446744073709551615]}`,
		`{"timestamp": 1e300, "input_length": 5, "output_length": 1, "hash_ids": [1.5]}`,
		`not json`,
	)
	f.Fuzz(func(t *testing.T, data []byte, skip bool) { fuzzSource(t, data, FormatMooncake, skip) })
}

func FuzzMooncakeInfer(f *testing.F) {
	addSeeds(f, string(genMooncake(4)), `{"timestamp": 0, "input_length": 1100, "output_length": 10, "hash_ids": [1, 2, 3]}
{"timestamp": 20, "input_length": 1600, "output_length": 10, "hash_ids": [1, 2, 4, 5]}`)
	f.Fuzz(func(t *testing.T, data []byte, skip bool) {
		src, err := NewMooncake(bytes.NewReader(data), "fuzz", LoadOptions{SkipBad: skip, InferSessions: true, SessionIdle: 1e9})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ComputeStats(Limit(src, 20000)); errors.Is(err, ErrContract) || skip && err != nil {
			t.Fatalf("%v\ninput: %q", err, data)
		}
	})
}

func FuzzBailian(f *testing.F) {
	addSeeds(f,
		string(genBailian(6)),
		`{"chat_id": "a", "parent_chat_id": "a", "timestamp": 1, "input_length": 5, "output_length": 1, "type": "text", "turn": 1, "hash_ids": [1]}`,
		`{"chat_id": 1, "parent_chat_id": -1, "timestamp": 0, "input_length": 32, "output_length": 1, "hash_ids": [1, 2]}
{"chat_id": 2, "parent_chat_id": 1, "timestamp": 7200, "input_length": 48, "output_length": 1, "hash_ids": [1, 2, 3]}
{"chat_id": 2, "parent_chat_id": 2, "timestamp": 7201, "input_length": 8, "output_length": 1, "hash_ids": [9]}`,
		`{"chat_id": [1], "timestamp": 1}`,
	)
	f.Fuzz(func(t *testing.T, data []byte, skip bool) { fuzzSource(t, data, FormatBailian, skip) })
}

func FuzzAzure(f *testing.F) {
	addSeeds(f,
		string(genAzure(3)),
		"GeneratedTokens,Foo,ContextTokens,TIMESTAMP\n5,x,100,2024-05-10T00:00:00Z\n\n0,y,32,1715299201.5\n",
		"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:04,abc,3\n\"unterminated,1,2\n",
		"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:04,5\n",
	)
	f.Fuzz(func(t *testing.T, data []byte, skip bool) { fuzzSource(t, data, FormatAzure, skip) })
}

func FuzzTraceLab(f *testing.F) {
	addSeeds(f,
		string(genTraceLab(12)),
		`{"session_id": "a", "round_index": 1, "input_tokens_total": 10, "prefix_tokens": 2, "output_tokens": 1}
{"session_id": "a", "round_index": 0, "input_tokens_total": 10, "prefix_tokens": 20, "output_tokens": 1}
{"session_id": "a", "round_index": 1, "prefix_tokens": 2, "newly_append_tokens": 5, "output_tokens": 1, "timing_events": [{"event_type": "user_message", "timestamp": "2199-01-01T00:00:00Z"}]}
{"session_id": 7, "round_index": 0, "input_tokens_total": 10, "prefix_tokens": 2, "output_tokens": 1, "timing_events": [{"event_type": "text", "timestamp": "1971-01-01T00:00:00Z"}]}`,
	)
	f.Fuzz(func(t *testing.T, data []byte, skip bool) { fuzzSource(t, data, FormatTraceLab, skip) })
}

func FuzzClaudeCode(f *testing.F) {
	addSeeds(f,
		string(genClaudeCode(3)),
		`{"id": "x", "block_size": 64, "tool_tokens": 100, "system_tokens": 50, "requests": [{"t": 0, "in": 100, "out": 1, "hash_ids": [1]}, {"t": 1, "in": "big", "out": 1, "hash_ids": [1]}]}`,
		`{"id": "x", "requests": [{"t": 5, "in": 100, "out": 1, "hash_ids": [1]}, {"t": 1, "in": 100, "out": 1, "hash_ids": [2]}]}`,
		`{"id": "x", "requests": [{"t": 0, "type": "subagent", "agent_id": "a", "requests": [{"t": 0, "in": 10, "out": 1, "hash_ids": []}, {"t": 0, "type": "subagent", "requests": []}]}]}`,
		`{"requests": null}`,
	)
	f.Fuzz(func(t *testing.T, data []byte, skip bool) {
		opts := LoadOptions{SkipBad: skip, ShareSystemPrefix: true}
		src, err := NewClaudeCodeSession(bytes.NewReader(data), "fuzz", opts)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ComputeStats(Limit(src, 20000))
		if errors.Is(err, ErrContract) || skip && err != nil {
			t.Fatalf("%v\ninput: %q", err, data)
		}
	})
}

// FuzzOpenReader feeds arbitrary bytes through format detection.
func FuzzOpenReader(f *testing.F) {
	addSeeds(f, string(genMooncake(2)), string(genBailian(2)), string(genAzure(2)), string(genTraceLab(2)), string(genClaudeCode(2)), `{"foo": 1}`, "")
	f.Fuzz(func(t *testing.T, data []byte, skip bool) { fuzzSource(t, data, "", skip) })
}

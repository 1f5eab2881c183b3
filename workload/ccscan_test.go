package workload

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
)

var ccDecoderSeeds = []string{
	`{"id": "x", "block_size": 64, "tool_tokens": 100, "system_tokens": 50, "requests": [{"t": 0, "in": 100, "out": 1, "hash_ids": [1]}, {"t": 1, "in": "big", "out": 1, "hash_ids": [1]}]}`,
	`{"id": "x", "requests": [{"t": 5, "in": 100, "out": 1, "hash_ids": [1]}, {"t": 1, "in": 100, "out": 1, "hash_ids": [2]}]}`,
	`{"id": "x", "requests": [{"t": 0, "type": "subagent", "agent_id": "a", "requests": [{"t": 0, "in": 10, "out": 1, "hash_ids": []}, {"t": 0, "type": "subagent", "requests": []}]}]}`,
	`{"requests": null}`,
	`{"requests": []}`,
	`{"ID": "y", "requests": [{"T": 0, "in": 10, "out": 1, "hash_ids": [1]}]}`,
	`{"id": "y", "id": "z", "requests": [{"t": 0, "in": 10, "out": 1, "hash_ids": [1], "hash_ids": [2]}]}`,
	`{"id": "\u0079", "models": ["m\u00e9"], "totals": {"a": [1, 2.5, null, true]}, "requests": [{"t": 0.25, "in": 10, "out": 0, "hash_ids": [1, 2], "input_types": ["text"], "stop": "end_turn", "api_time": 1.5, "think_time": 0.5}]}`,
	`{"id": "y", "requests": [{"t": 0, "type": "subagent", "agent_id": "b", "tool_tokens": 10, "system_tokens": 5, "requests": [{"t": 0, "in": 10, "out": 1, "hash_ids": [1.5]}, null, 7, {"t": 1e400}]}]}`,
	`{"id": "y", "requests": [{"t": 0, "in": 10, "out": 1, "hash_ids": [1]}]} trailing`,
	`{"id": 5, "requests": [{"t": 0, "in": 10, "out": 1, "hash_ids": [1]}]}`,
	"{\"id\": \"\xff\", \"requests\": [{\"t\": 0, \"in\": 10, \"out\": 1, \"hash_ids\": [1], \"type\": \"\xc3\xa9\"}]}",
	`[{"id": "y"}]`,
	``,
}

// checkCCDecoders compares the fast Claude Code decoder with encoding/json:
// document by document (whenever the scanner accepts, encoding/json decodes
// the same values, nested requests included) and as a whole load.
func checkCCDecoders(t *testing.T, data []byte, skip bool) {
	var fast, slow ccFileJSON[ccReqJSON]
	sc := &ccScanner{b: data}
	if sc.doc(&fast) {
		if err := json.Unmarshal(data, &slow); err != nil {
			t.Fatalf("scanner accepted a document encoding/json rejects (%v): %q", err, data)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("documents differ on %q:\nfast %+v\nslow %+v", data, fast, slow)
		}
		var nested func(reqs []ccReqJSON)
		nested = func(reqs []ccReqJSON) {
			for _, r := range reqs {
				for _, raw := range r.Requests {
					var f, s ccReqJSON
					ferr := decodeReq(&ccScanner{}, raw, &f)
					serr := json.Unmarshal(raw, &s)
					if (ferr == nil) != (serr == nil) || ferr != nil && ferr.Error() != serr.Error() || !reflect.DeepEqual(f, s) {
						t.Fatalf("nested request %q: fast %+v %v, slow %+v %v", raw, f, ferr, s, serr)
					}
					nested([]ccReqJSON{f})
				}
			}
		}
		nested(fast.Requests)
	}
	checkSlowLoads(t, data, []LoadOptions{{SkipBad: skip}, {SkipBad: skip, ShareSystemPrefix: true, BlockTokens: 16}},
		NewClaudeCodeSession, func(s *ClaudeCode) { s.slow = true })
}

// FuzzClaudeCodeDecoders is the differential test of the fast Claude Code
// decoder against encoding/json on arbitrary documents.
func FuzzClaudeCodeDecoders(f *testing.F) {
	addSeeds(f, append(ccDecoderSeeds, string(genClaudeCode(3)))...)
	f.Fuzz(checkCCDecoders)
}

// The scanner takes the plain documents (a scanner declining everything
// would pass checkCCDecoders trivially), including the shipped trace.
func TestCCScannerAcceptsPlainDocuments(t *testing.T) {
	plain := func(t *testing.T, data []byte) {
		var d ccFileJSON[ccReqJSON]
		if !(&ccScanner{b: data}).doc(&d) {
			t.Fatalf("scanner declined a plain document: %.200q", data)
		}
		checkCCDecoders(t, data, false)
	}
	plain(t, genClaudeCode(20))
	for _, s := range ccDecoderSeeds {
		checkCCDecoders(t, []byte(s), false)
		checkCCDecoders(t, []byte(s), true)
	}
	t.Run("shipped", func(t *testing.T) {
		data, err := os.ReadFile(tracesDir(t, "weka-claude-code/trace_0036.json"))
		if err != nil {
			t.Fatal(err)
		}
		plain(t, data)
	})
}

package workload

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

var blDecoderSeeds = []string{
	`{"chat_id": "a", "parent_chat_id": "a", "timestamp": 1, "input_length": 5, "output_length": 1, "type": "text", "turn": 1, "hash_ids": [1]}`,
	`{"chat_id": 1, "parent_chat_id": -1, "timestamp": 0, "input_length": 32, "output_length": 1, "hash_ids": [1, 2]}
{"chat_id": 2, "parent_chat_id": 1, "timestamp": 7200, "input_length": 48, "output_length": 1, "hash_ids": [1, 2, 3]}
{"chat_id": 2, "parent_chat_id": 2, "timestamp": 7201, "input_length": 8, "output_length": 1, "hash_ids": [9]}`,
	`{"chat_id": [1], "timestamp": 1}`,
	`{"chat_id": null, "parent_chat_id": null, "timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1]}`,
	`{"Chat_ID": 3, "timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1]}`,
	`{"chat_id": 3, "chat_id": 4, "timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1]}`,
	`{"chat_id": "\u0061", "timestamp": 1.5e0, "input_length": 5, "output_length": 0, "hash_ids": [], "type": "\u00e9", "extra": {"x": [true]}}`,
	`{"chat_id": 3, "timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1], "type": 5}`,
	`{"chat_id": 3, "timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1]}}`,
	"not json",
}

// checkBLDecoders compares the fast Bailian decoder with encoding/json
// line by line and as a whole load.
func checkBLDecoders(t *testing.T, data []byte, skip bool) {
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		var fast, slow blJSON
		var s blScratch
		if !s.scan(line, &fast) {
			continue
		}
		if err := json.Unmarshal(line, &slow); err != nil {
			t.Fatalf("scanner accepted a line encoding/json rejects (%v): %q", err, line)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("fields differ on %q:\nfast %+v\nslow %+v", line, fast, slow)
		}
	}
	checkSlowLoads(t, data, []LoadOptions{{SkipBad: skip}, {SkipBad: skip, FullBlocks: true, ReorderWindow: time.Second, SessionIdle: time.Second}},
		NewBailian, func(s *Bailian) { s.slow = true })
}

// FuzzBailianDecoders is the differential test of the fast Bailian decoder
// against encoding/json on arbitrary input.
func FuzzBailianDecoders(f *testing.F) {
	addSeeds(f, append(blDecoderSeeds, string(genBailian(6)))...)
	f.Fuzz(checkBLDecoders)
}

func TestBLScannerAcceptsPlainLines(t *testing.T) {
	var s blScratch
	n := 0
	for line := range bytes.SplitSeq(bytes.TrimSpace(genBailian(30)), []byte("\n")) {
		var j blJSON
		if !s.scan(line, &j) {
			t.Fatalf("scanner declined a plain line: %q", line)
		}
		n++
	}
	if n != 30 {
		t.Fatalf("%d lines", n)
	}
	checkBLDecoders(t, genBailian(30), false)
	for _, seed := range blDecoderSeeds {
		checkBLDecoders(t, []byte(seed), false)
		checkBLDecoders(t, []byte(seed), true)
	}
}

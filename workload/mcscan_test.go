package workload

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"testing"
	"time"
)

// decoderSeeds are lines on the edges of the fast scanner: each must give
// what encoding/json gives (value or error).
var decoderSeeds = []string{
	// appendIDs' ", " fast path and its 19-digit unchecked numbers.
	`{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1, ]}`,
	`{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1,  2, 3 ,4,5 , 6]}`,
	`{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1, 02]}`,
	`{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [9999999999999999999, 18446744073709551615]}`,
	`{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [18446744073709551616]}`,
	`{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [00000000000000000001]}`,
	`{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1, -2]}`,
	`{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1, 2`,
	`{"timestamp": 0, "input_length": 50, "output_length": 10, "hash_ids": [1, 2], "session_id": "a", "turn": 0}
{"timestamp": 1000, "input_length": 90, "output_length": 10, "hash_ids": [1, 2, 3], "session_id": "a", "turn": 1, "think_ms": 250, "append_length": 30, "block_tokens": 24}`,
	`{"Timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": []}`,
	`{"timestamp": 1, "TIMESTAMP": 2, "input_length": 5, "output_length": 1, "hash_ids": []}`,
	`{"timestamp": 1, "timestamp": 2, "input_length": 5, "output_length": 1, "hash_ids": [1], "hash_ids": [2]}`,
	`{"timestamp": null, "input_length": 5, "output_length": 1, "hash_ids": null}`,
	`{"\u0074imestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1]}`,
	`{"timestamp": 1e400, "input_length": 5, "output_length": 1, "hash_ids": [1]}`,
	`{"timestamp": -0, "input_length": -0.0, "output_length": 1E2, "hash_ids": [0], "block_tokens": -0}`,
	`{"timestamp": 1.5, "input_length": 5.0, "output_length": 1, "hash_ids": [01]}`,
	`{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1.5]}`,
	`{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1e3]}`,
	`{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [18446744073709551616]}`,
	`{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [18446744073709551615, -1]}`,
	`{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": "x"}`,
	`{"timestamp": "1", "input_length": 5, "output_length": 1, "hash_ids": [1]}`,
	`{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1],}`,
	`{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1]} x`,
	`{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1]}{}`,
	`[{"timestamp": 1}]`,
	`{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [ 1 , 2 ] , "model": {"a": [1, "b", null, true, false, -2.5e-3]}, "x": "\u00e9\n"}`,
	`{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1], "session_id": "s\u00e9", "session_name": "caf\u00e9"}`,
	"{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [1], \"session_id\": \"\xff\xfe\", \"session_name\": \"\xc3\xa9t\xe9\"}",
	"{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [1], \"sessi\xc5\xbfon_id\": 3}",
	"{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [1], \"\xe2\x84\xaaey\": 3, \"la\xc5\xbft\": true}",
	`{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1], "session_id": 0.5e1, "last": true}`,
	`{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1], "session_id": -7, "last": false, "turn": 3}`,
	`{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1], "session_id": true}`,
	`{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1], "session_id": null, "session_name": null, "last": null}`,
	`{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1], "last": "true"}`,
	`{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1], "session_id": "a\"b"}`,
	"{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [1], \"session_id\": \"a\tb\"}",
	"{\"timestamp\":1,\t\"input_length\":5,\r\"output_length\":1,\"hash_ids\":[\t1\r]}",
	`{"timestamp": 12345678901234567, "input_length": 123456789012345, "output_length": 1, "hash_ids": []}`,
	`{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1], "extra": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
	`{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1], "extra": 1e999}`,
	`{}`,
	`{"timestamp": 1 "input_length": 5}`,
	`{"timestamp" 1}`,
	`{timestamp: 1}`,
	`{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1, 2`,
	`{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1], "session_id": "s", "turn": 0}
{"timestamp": 2, "input_length": 50, "output_length": 1, "prefix_blocks": 1, "new_hash_ids": [2, 3], "session_id": "s", "turn": 1}
{"timestamp": 3, "input_length": 50, "output_length": 1, "prefix_blocks": 2, "new_hash_ids": [], "session_id": "s", "last": true}
{"timestamp": 4, "input_length": 50, "output_length": 1, "prefix_blocks": 2, "new_hash_ids": [4], "session_id": "s"}`,
	`{"timestamp": 1, "input_length": 5, "output_length": 1, "prefix_blocks": 0, "new_hash_ids": [1.5]}
{"timestamp": 1, "input_length": 5, "output_length": 1, "prefix_blocks": 1, "new_hash_ids": [1]}
{"timestamp": 1, "input_length": 5, "output_length": 1, "prefix_blocks": 0, "new_hash_ids": [1], "hash_ids": [1]}
{"timestamp": 1, "input_length": 5, "output_length": 1, "prefix_blocks": 0}
{"timestamp": 1, "input_length": 5, "output_length": 1, "new_hash_ids": "x"}`,
	"not json",
}

// loadSource is a loader loadAll reads: requests, skipped records and
// warnings.
type loadSource interface {
	Source
	Skipper
	Warner
}

// loadAll reads src to the end (or its first error) and returns what it
// emitted, the error text, the skipped count and the warnings.
func loadAll(src loadSource) string {
	var b bytes.Buffer
	for range 20000 {
		r, err := src.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fmt.Fprintf(&b, "error: %v\n", err)
			break
		}
		fmt.Fprintf(&b, "%+v\n", *r)
	}
	fmt.Fprintf(&b, "skipped %d, warnings %q\n", src.Skipped(), src.Warnings())
	return b.String()
}

// checkSlowLoads loads data with each of opts twice, through the fast
// decoder and through encoding/json (open's second source, made slow by
// setSlow), and fails the test when the two loads differ (requests, error
// text, skipped records or warnings).
func checkSlowLoads[S loadSource](t *testing.T, data []byte, opts []LoadOptions, open func(io.Reader, string, LoadOptions) (S, error), setSlow func(S)) {
	t.Helper()
	for _, o := range opts {
		fast, err := open(bytes.NewReader(data), "fuzz", o)
		if err != nil {
			t.Fatal(err)
		}
		slow, _ := open(bytes.NewReader(data), "fuzz", o)
		setSlow(slow)
		if f, s := loadAll(fast), loadAll(slow); f != s {
			t.Fatalf("loads differ (%+v)\nfast:\n%s\nencoding/json:\n%s\ninput: %q", o, f, s, data)
		}
	}
}

// checkDecoders compares the fast decoder with encoding/json on data: line
// by line (whenever the scanner accepts a line, encoding/json accepts it
// and decodes the same fields) and as a whole load (same requests, same
// error text, same skipped records and warnings).
func checkDecoders(t *testing.T, data []byte, skip bool) {
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		var fast, slow mcFields
		if !fast.scan(line, nil, nil) {
			continue
		}
		if err := slow.decodeSlow(line); err != nil {
			t.Fatalf("scanner accepted a line encoding/json rejects (%v): %q", err, line)
		}
		if d := diffFields(&fast, &slow); d != "" {
			t.Fatalf("fields differ on %q: %s", line, d)
		}
	}
	checkSlowLoads(t, data, []LoadOptions{
		{SkipBad: skip},
		{SkipBad: skip, ReorderWindow: 50 * time.Millisecond, BlockTokens: 16, FullBlocks: true, SessionIdle: time.Second},
		{SkipBad: skip, InferSessions: true, SessionIdle: -1},
	}, NewMooncake, func(s *Mooncake) { s.slow = true })
}

func diffFields(a, b *mcFields) string {
	for i := range a.nums {
		if math.Float64bits(a.nums[i]) != math.Float64bits(b.nums[i]) {
			return fmt.Sprintf("%s: %v vs %v", mcKeys[i], a.nums[i], b.nums[i])
		}
	}
	switch {
	case a.has != b.has:
		return fmt.Sprintf("has %b vs %b", a.has, b.has)
	case !slices.Equal(a.hashIDs, b.hashIDs) || (a.hashIDs == nil) != (b.hashIDs == nil):
		return fmt.Sprintf("hash_ids %v vs %v", a.hashIDs, b.hashIDs)
	case !slices.Equal(a.newHashIDs, b.newHashIDs) || (a.newHashIDs == nil) != (b.newHashIDs == nil):
		return fmt.Sprintf("new_hash_ids %v vs %v", a.newHashIDs, b.newHashIDs)
	case !bytes.Equal(a.sessionID, b.sessionID):
		return fmt.Sprintf("session_id %q vs %q", a.sessionID, b.sessionID)
	case a.sessionName != b.sessionName || a.last != b.last:
		return fmt.Sprintf("session_name/last %q %v vs %q %v", a.sessionName, a.last, b.sessionName, b.last)
	}
	return ""
}

// FuzzMooncakeDecoders is the differential test of the fast Mooncake
// decoder against encoding/json on arbitrary input, malformed lines
// included.
func FuzzMooncakeDecoders(f *testing.F) {
	addSeeds(f, append(decoderSeeds, string(genMooncake(3)))...)
	f.Fuzz(checkDecoders)
}

// The seeds exercise both decoders: most are declined by the scanner, the
// plain ones are accepted. A scanner that declined everything would pass
// checkDecoders trivially; this test fails then.
func TestScannerAcceptsPlainRecords(t *testing.T) {
	var fields mcFields
	accepted := 0
	for line := range bytes.SplitSeq(genMooncake(50), []byte("\n")) {
		if len(line) > 0 && fields.scan(line, nil, nil) {
			accepted++
		}
	}
	if accepted != 50 {
		t.Fatalf("scanner accepted %d of 50 plain lines", accepted)
	}
	var buf bytes.Buffer
	g, err := NewAgentic(AgenticConfig{Sessions: 3, Turns: 4}, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteJSONL(&buf, g); err != nil {
		t.Fatal(err)
	}
	for line := range bytes.SplitSeq(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		if !fields.scan(line, nil, nil) {
			t.Fatalf("scanner declined WriteJSONL's line %q", line)
		}
	}
	for _, s := range decoderSeeds {
		checkDecoders(t, []byte(s), false)
		checkDecoders(t, []byte(s), true)
	}
}

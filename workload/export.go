package workload

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// WriteJSONL drains src into w as Mooncake-style JSONL, one request per
// line: `timestamp` (ms, fractional when needed so that Arrival round-trips
// to the nanosecond), `input_length`, `output_length`, `hash_ids` (Blocks as
// unsigned integers; they may exceed 2^53, so read them as 64-bit integers),
// plus `session_id` (the dense session index), `session_name`, `turn`,
// `think_ms`, `append_length`, `block_tokens` and, on a session's final
// turn, `last`.
// The Mooncake loader honours the extra fields, so the file replays as the
// same sequence of requests (IDs and session indexes are reassigned densely
// in the same order).
func WriteJSONL(w io.Writer, src Source) error { return writeJSONL(w, src, false) }

// WriteCompactJSONL is WriteJSONL in the compact form (docs/TRACES.md): a
// line carries `prefix_blocks` P, the number of leading blocks it shares
// with the previous line of its session, and `new_hash_ids`, the blocks
// after them, instead of `hash_ids`. A session's blocks are kept until its
// line with `last: true`.
func WriteCompactJSONL(w io.Writer, src Source) error { return writeJSONL(w, src, true) }

func writeJSONL(w io.Writer, src Source, compact bool) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	var buf []byte
	var prev map[int32][]uint64
	if compact {
		prev = map[int32][]uint64{}
	}
	for {
		r, err := src.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if r == nil {
			return errors.New("workload: source returned a nil request without error")
		}
		prefix := -1
		if compact {
			p := prev[r.Session]
			prefix = 0
			for prefix < len(p) && prefix < len(r.Blocks) && p[prefix] == r.Blocks[prefix] {
				prefix++
			}
			if r.Last {
				delete(prev, r.Session)
			} else {
				prev[r.Session] = r.Blocks
			}
		}
		buf = appendJSONL(buf[:0], r, prefix)
		if _, err := bw.Write(buf); err != nil {
			return fmt.Errorf("workload: write: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("workload: write: %w", err)
	}
	return nil
}

func appendMS(b []byte, d time.Duration) []byte {
	if d%time.Millisecond == 0 {
		return strconv.AppendInt(b, int64(d/time.Millisecond), 10)
	}
	return strconv.AppendFloat(b, float64(d)/float64(time.Millisecond), 'f', -1, 64)
}

// appendJSONL appends r's line: with hash_ids, or when prefix >= 0 in the
// compact form (prefix_blocks and the new_hash_ids after them).
func appendJSONL(b []byte, r *Request, prefix int) []byte {
	b = append(b, `{"timestamp":`...)
	b = appendMS(b, r.Arrival)
	b = append(b, `,"input_length":`...)
	b = strconv.AppendInt(b, int64(r.InputLen), 10)
	b = append(b, `,"output_length":`...)
	b = strconv.AppendInt(b, int64(r.OutputLen), 10)
	ids := r.Blocks
	if prefix < 0 {
		b = append(b, `,"hash_ids":[`...)
	} else {
		b = append(b, `,"prefix_blocks":`...)
		b = strconv.AppendInt(b, int64(prefix), 10)
		b = append(b, `,"new_hash_ids":[`...)
		ids = ids[prefix:]
	}
	for i, h := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, h, 10)
	}
	b = append(b, `],"session_id":`...)
	b = strconv.AppendInt(b, int64(r.Session), 10)
	if r.SessionName != "" {
		b = append(b, `,"session_name":`...)
		q, _ := json.Marshal(r.SessionName) // a string always marshals
		b = append(b, q...)
	}
	b = append(b, `,"turn":`...)
	b = strconv.AppendInt(b, int64(r.Turn), 10)
	b = append(b, `,"think_ms":`...)
	b = appendMS(b, r.Think)
	b = append(b, `,"append_length":`...)
	b = strconv.AppendInt(b, int64(r.AppendLen), 10)
	b = append(b, `,"block_tokens":`...)
	b = strconv.AppendInt(b, int64(max(r.BlockTokens, 1)), 10)
	if r.Last {
		b = append(b, `,"last":true`...)
	}
	return append(b, "}\n"...)
}

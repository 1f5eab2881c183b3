package workload

import (
	"bytes"
	"encoding/json"
	"time"
	"unicode/utf8"
)

// opt is the pointer encoding/json would have set for an optional field.
func opt(f *mcFields, bit uint16) *float64 {
	if f.has&bit == 0 {
		return nil
	}
	return f.num(bit)
}

// record validates the decoded fields of one line, resolves its blocks
// (compact form) and interns them into the session's shared array.
func (m *Mooncake) record(f *mcFields) (*mcRecord, error) {
	rec := m.newRecord()
	rec.line, rec.bt = m.lr.line, m.bt
	var err error
	if f.has&hasTimestamp == 0 {
		return nil, badField("timestamp", "missing")
	}
	if rec.at, err = durField("timestamp", *f.num(hasTimestamp), time.Millisecond); err != nil {
		return nil, err
	}
	if rec.in, err = intField("input_length", opt(f, hasInputLength), 0); err != nil {
		return nil, err
	}
	if rec.out, err = outputField("output_length", opt(f, hasOutputLength), &m.zeroOutputs); err != nil {
		return nil, err
	}
	if f.has&hasBlockTokens != 0 {
		if rec.bt, err = intField("block_tokens", f.num(hasBlockTokens), 1); err != nil {
			return nil, err
		}
	}
	compact := f.has&(hasPrefixBlocks|hasNewHashIDs) != 0
	prefix := 0
	if compact {
		switch {
		case f.has&hasHashIDs != 0:
			return nil, badField("hash_ids", "cannot be combined with prefix_blocks and new_hash_ids (the compact form)")
		case f.has&hasPrefixBlocks == 0:
			return nil, badField("prefix_blocks", "missing (new_hash_ids needs it)")
		case f.has&hasNewHashIDs == 0:
			return nil, badField("new_hash_ids", "missing (prefix_blocks needs it)")
		}
		if prefix, err = intField("prefix_blocks", f.num(hasPrefixBlocks), 0); err != nil {
			return nil, err
		}
	} else {
		if f.has&hasHashIDs == 0 {
			return nil, badField("hash_ids", "missing")
		}
		if err := checkBlocks("hash_ids", len(f.hashIDs), rec.in, rec.bt); err != nil {
			return nil, err
		}
	}
	if rec.session, rec.hasSess, err = idString("session_id", f.sessionID); err != nil {
		return nil, err
	}
	m.badSess, m.badHas, m.badKnown = rec.session, rec.hasSess, true
	rec.sessName = rec.session
	if f.has&hasSessionName != 0 && f.sessionName != "" {
		rec.sessName = f.sessionName
	}
	if f.has&hasTurn != 0 {
		if rec.turn, err = intField("turn", f.num(hasTurn), 0); err != nil {
			return nil, err
		}
		rec.hasTurn = true
	}
	if f.has&hasThinkMS != 0 {
		if *f.num(hasThinkMS) < 0 {
			return nil, badField("think_ms", "%v must be >= 0", *f.num(hasThinkMS))
		}
		if rec.think, err = durField("think_ms", *f.num(hasThinkMS), time.Millisecond); err != nil {
			return nil, err
		}
		rec.hasThink = true
	}
	if f.has&hasAppendLength != 0 {
		if rec.appendLen, err = intField("append_length", f.num(hasAppendLength), 0); err != nil {
			return nil, err
		}
		if rec.appendLen > rec.in {
			return nil, badField("append_length", "%d exceeds input_length %d", rec.appendLen, rec.in)
		}
		rec.hasAppend = true
	}
	if f.has&hasLast != 0 {
		rec.last = f.last
	}
	var ch *mcChain
	if rec.hasSess {
		if m.opts.idle() > 0 {
			m.cexp.expire(rec.at-m.opts.idle(), func(at time.Duration, k string) {
				if c := m.chains[k]; c != nil && c.lastSeen == at && !c.compact {
					delete(m.chains, k)
				}
			})
		}
		ch = m.chains[rec.session]
	}
	tail := f.newHashIDs
	if compact {
		if prefix > 0 {
			switch {
			case !rec.hasSess:
				return nil, badField("prefix_blocks", "%d needs a session_id (the prefix is that of the session's previous line)", prefix)
			case ch == nil:
				return nil, badField("prefix_blocks", "%d refers to the previous line of session %q, but there is none (or it was marked last)", prefix, rec.session)
			case prefix > ch.n:
				return nil, badField("prefix_blocks", "%d exceeds the %d blocks of the previous line of session %q", prefix, ch.n, rec.session)
			}
		}
		if err := checkBlocks("new_hash_ids", prefix+len(tail), rec.in, rec.bt); err != nil {
			return nil, err
		}
	} else {
		if ch != nil {
			for prefix < ch.n && prefix < len(f.hashIDs) && f.hashIDs[prefix] == ch.arr[prefix] {
				prefix++
			}
		}
		tail = f.hashIDs[prefix:]
	}
	if m.q.tooLate(rec.at) {
		return nil, badField("timestamp", "%v ms is earlier than an already emitted record (file not sorted within the reorder window %v)",
			float64(rec.at)/float64(time.Millisecond), m.opts.ReorderWindow)
	}
	rec.blocks = m.intern(rec, ch, prefix, tail, compact)
	if m.opts.FullBlocks {
		k := min(len(rec.blocks), rec.in/rec.bt)
		rec.blocks = rec.blocks[:k:k]
	}
	return rec, nil
}

// blockChunk is how many block ids newBlocks carves its arrays from at
// once (64 KiB).
const blockChunk = 8192

// newBlocks returns a zeroed array of n block ids with cap == n, carved
// from a shared chunk when it is small: one allocation per line was the
// loader's largest share of a Mooncake run's. A chunk is freed with the
// last request that holds part of it; requests end roughly in file order,
// so that pins little.
func (m *Mooncake) newBlocks(n int) []uint64 {
	if n == 0 || n > blockChunk/8 {
		return make([]uint64, n) // n == 0: empty, not nil, as before
	}
	if len(m.blockArena) < n {
		m.blockArena = make([]uint64, blockChunk)
	}
	b := m.blockArena[:n:n]
	m.blockArena = m.blockArena[n:]
	return b
}

// intern returns the blocks of a validated line: the first prefix blocks of
// the session's previous line (ch; nil for none) followed by tail. Runs of
// a session whose lines extend each other share one backing array, which
// is only ever appended to: a line that extends the array's whole length
// appends in place, a line that is a prefix of it is a view, and anything
// else starts a new array. Returned slices have cap == len, so that no
// holder can append into the shared array.
func (m *Mooncake) intern(rec *mcRecord, ch *mcChain, prefix int, tail []uint64, compact bool) []uint64 {
	n := prefix + len(tail)
	var blocks []uint64
	switch {
	case ch != nil && prefix == len(ch.arr):
		ch.arr = append(ch.arr, tail...)
		blocks = ch.arr[:n:n]
	case ch != nil && len(tail) == 0:
		blocks = ch.arr[:n:n]
	default:
		blocks = m.newBlocks(n)
		if ch != nil {
			copy(blocks, ch.arr[:prefix])
		}
		copy(blocks[prefix:], tail)
		if ch != nil {
			ch.arr = blocks
		}
	}
	if !rec.hasSess {
		return blocks
	}
	if rec.last {
		delete(m.chains, rec.session)
		return blocks
	}
	if ch == nil {
		ch = &mcChain{arr: blocks}
		m.chains[rec.session] = ch
	}
	ch.n = n
	ch.compact = ch.compact || compact
	ch.lastSeen = rec.at
	if m.opts.idle() > 0 && !ch.compact {
		m.cexp.push(rec.at, rec.session)
	}
	return blocks
}

// idString reads an id that may be a JSON string or number; null or absent
// means none.
func idString(field string, raw json.RawMessage) (string, bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, nil
	}
	switch raw[0] {
	case '"':
		// Without escapes, valid UTF-8 decodes to itself (raw is valid JSON).
		if len(raw) >= 2 && raw[len(raw)-1] == '"' {
			if in := raw[1 : len(raw)-1]; bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
				return string(in), true, nil
			}
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", false, badField(field, "%v", err)
		}
		return s, true, nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return string(raw), true, nil
	}
	return "", false, badField(field, "must be a string or a number, not %.20s", raw)
}

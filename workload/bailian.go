package workload

import (
	"encoding/json"
	"io"
	"time"
)

// Bailian streams a Qwen Bailian JSONL trace: `chat_id`, `parent_chat_id`
// (−1 or absent for a root), `timestamp` (s), `input_length`,
// `output_length`, `type`, `turn` and `hash_ids` (prefix-chained ids of
// 16-token blocks, used as Blocks unchanged).
//
// Sessions follow the parent chain: a root chat starts a session (named by
// its chat_id) and every chat inherits its parent's session; turns are
// numbered densely in emission order (a parent with several children, e.g.
// regenerated answers, gives the session several later turns). The trace's
// own `turn` and `type` are only type-checked. A chat whose parent is
// unknown (before the file's start, or forgotten after SessionIdle) starts
// a new session and is counted by Orphans. Think is the gap from the parent's
// arrival minus 20 ms per parent output token (floored at 0); AppendLen is
// derived from the hash prefix shared with the parent.
//
// Arrivals are rebased so that the first request arrives at 0. Memory holds
// the chats seen within SessionIdle (default one hour of trace time).
type Bailian struct {
	stream[*blRecord]
	fileCloser
	lr      *lineReader
	base    time.Duration
	based   bool
	chats   map[string]*blChat
	exp     expiry[string]
	orphans int
	fast    blScratch // the fast decoder's storage (blscan.go)
	slow    bool      // tests: decode with encoding/json only
}

type blRecord struct {
	line      int
	at        time.Duration
	in, out   int
	blocks    []uint64
	chat      string
	parent    string
	hasParent bool
}

type blChat struct {
	sess    *blSession
	prev    prevTurn
	arrival time.Duration
	at      time.Duration
}

type blSession struct {
	idx   int32
	name  string
	turns int
}

type blJSON struct {
	ChatID       json.RawMessage `json:"chat_id"`
	ParentChatID json.RawMessage `json:"parent_chat_id"`
	Timestamp    *float64        `json:"timestamp"`
	InputLength  *float64        `json:"input_length"`
	OutputLength *float64        `json:"output_length"`
	Type         *string         `json:"type"`
	Turn         *float64        `json:"turn"`
	HashIDs      *idList         `json:"hash_ids"`
}

// NewBailian reads a Qwen Bailian JSONL trace from r (name is used in errors).
func NewBailian(r io.Reader, name string, opts LoadOptions) (*Bailian, error) {
	s, err := newStream[*blRecord](name, opts, 16)
	if err != nil {
		return nil, err
	}
	return &Bailian{stream: s, lr: newLineReader(r), chats: map[string]*blChat{}}, nil
}

// Orphans is the number of chats whose parent_chat_id named a chat that was
// not (or no longer) known; each started a new session.
func (b *Bailian) Orphans() int { return b.orphans }

// Next implements Source.
func (b *Bailian) Next() (*Request, error) {
	return b.next(b.read, func(rec *blRecord) (*Request, error) { return b.build(rec), nil })
}

func (b *Bailian) read() error {
	line, ok, err := b.readLine(b.lr)
	if !ok {
		return err
	}
	rec, err := b.parse(line)
	if err == nil && b.q.tooLate(rec.at) {
		err = badField("timestamp", "%v s is earlier than an already emitted record (file not sorted within the reorder window %v)",
			rec.at.Seconds(), b.opts.ReorderWindow)
	}
	if err != nil {
		if b.opts.SkipBad {
			b.skipped++
			return nil
		}
		return locate(b.name, b.lr.line, "", err)
	}
	b.q.push(rec.at, rec)
	return nil
}

func (b *Bailian) parse(line []byte) (*blRecord, error) {
	var j blJSON
	fast := !b.slow && b.fast.scan(line, &j)
	if !fast {
		j = blJSON{}
		if err := json.Unmarshal(line, &j); err != nil {
			return nil, err
		}
	}
	rec := &blRecord{line: b.lr.line}
	var err error
	var ok bool
	if rec.chat, ok, err = idString("chat_id", j.ChatID); err != nil {
		return nil, err
	} else if !ok {
		return nil, badField("chat_id", "missing")
	}
	if rec.parent, rec.hasParent, err = idString("parent_chat_id", j.ParentChatID); err != nil {
		return nil, err
	}
	if rec.parent == "-1" || rec.parent == "" {
		rec.hasParent = false
	}
	if j.Timestamp == nil {
		return nil, badField("timestamp", "missing")
	}
	if rec.at, err = durField("timestamp", *j.Timestamp, time.Second); err != nil {
		return nil, err
	}
	if rec.in, err = intField("input_length", j.InputLength, 0); err != nil {
		return nil, err
	}
	if rec.out, err = outputField("output_length", j.OutputLength, &b.zeroOutputs); err != nil {
		return nil, err
	}
	if j.Turn != nil {
		if _, err = intField("turn", j.Turn, 0); err != nil {
			return nil, err
		}
	}
	if rec.blocks, err = requiredHashIDs(j.HashIDs, rec.in, b.bt); err != nil {
		return nil, err
	}
	if fast { // the ids are in the scratch array
		rec.blocks = append(make([]uint64, 0, len(rec.blocks)), rec.blocks...)
	}
	if b.opts.FullBlocks {
		rec.blocks = rec.blocks[:min(len(rec.blocks), rec.in/b.bt)]
	}
	return rec, nil
}

func (b *Bailian) build(rec *blRecord) *Request {
	if !b.based {
		b.base, b.based = rec.at, true
	}
	if idle := b.opts.idle(); idle > 0 {
		b.exp.expire(rec.at-idle, func(at time.Duration, k string) {
			if c := b.chats[k]; c != nil && c.at == at {
				delete(b.chats, k)
			}
		})
		b.exp.push(rec.at, rec.chat)
	}
	arrival := rec.at - b.base
	r := &Request{
		Arrival: arrival, InputLen: rec.in, OutputLen: rec.out,
		Blocks: rec.blocks, BlockTokens: b.bt, AppendLen: rec.in,
	}
	var parent *blChat
	if rec.hasParent {
		if parent = b.chats[rec.parent]; parent == nil {
			b.orphans++
		}
	}
	var s *blSession
	if parent != nil {
		s = parent.sess
		r.Think = max(0, arrival-parent.arrival-time.Duration(parent.prev.out)*nominalTokenTime)
		r.AppendLen = appendLen(rec.in, rec.blocks, b.bt, &parent.prev)
	} else {
		s = &blSession{idx: b.newSession(), name: rec.chat}
	}
	r.Session, r.SessionName, r.Turn = s.idx, s.name, s.turns
	if s.turns == 0 {
		r.Think, r.AppendLen = 0, rec.in
	}
	s.turns++
	b.chats[rec.chat] = &blChat{
		sess: s, arrival: arrival, at: rec.at,
		prev: prevTurn{in: rec.in, out: rec.out, blocks: rec.blocks, bt: b.bt},
	}
	return r
}

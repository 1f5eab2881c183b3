package workload

import (
	"io"
	"strconv"
	"time"

	"github.com/pdemu/pdemu/internal/freelist"
)

// nominalTokenTime is the nominal per-output-token service time used to
// turn an arrival gap into a think time when a trace records only arrivals
// (the same convention as Agentic's open-loop model): Think = gap − 20 ms ×
// the predecessor's output tokens, floored at 0.
const nominalTokenTime = 20 * time.Millisecond

// Mooncake streams a Mooncake FAST'25 JSONL trace: one request per line with
// `timestamp` (ms), `input_length`, `output_length` and `hash_ids`
// (prefix-chained ids of 512-token blocks, used as Blocks unchanged; the
// published trace hashes ceil(input/512) blocks, the last one partial, and
// they are kept so its published reuse is reproduced).
//
// Without session information every request is a session of its own (turn
// 0, named "L<line>"). The optional fields written by WriteJSONL are
// honoured: `session_id` (string or number) groups requests into sessions
// in order of appearance, named by `session_name` if present (turns
// numbered densely; a `turn` that does not
// increase within a session is a bad record), `think_ms` gives Think,
// `append_length` gives AppendLen, `block_tokens` the block size and
// `last: true` marks a session's final turn.
// Without think_ms, Think is the arrival gap minus 20 ms per output token
// of the predecessor; without append_length, AppendLen is derived from the
// hash prefix shared with the session's previous turn. LoadOptions.
// InferSessions groups session-less requests by prefix extension.
//
// The compact form written by WriteCompactJSONL replaces hash_ids by
// `prefix_blocks` P and `new_hash_ids`: the blocks are the first P blocks
// of the previous line with the same session_id, then new_hash_ids
// (docs/TRACES.md). Lines of one session_id share an append-only block
// array (Request.Blocks).
//
// Arrivals are rebased so that the first request arrives at 0. Memory is
// bounded by the reorder window and the live sessions (SessionIdle; a
// compact-form session's latest blocks are kept until its last line).
type Mooncake struct {
	stream[*mcRecord]
	fileCloser
	lr    *lineReader
	base  time.Duration
	based bool
	// sessions named by session_id
	sessions map[string]*mcSession
	exp      expiry[string]
	// inferred sessions, keyed by the last full block of their latest turn
	inferred map[uint64]*mcSession
	iexp     expiry[*mcSession]

	// decoding: the record's fields, the fast scanner's reusable id
	// arrays, and slow (tests) to decode every line with encoding/json
	fields      mcFields
	ids, newIDs []uint64
	slow        bool
	// chains holds, per session_id in file order, the session's shared
	// append-only block array (see intern)
	chains map[string]*mcChain
	cexp   expiry[string]
	// the session_id of the line being parsed, once known (for SkipBad)
	badSess          string
	badHas, badKnown bool

	// Allocation (issue 24): a record goes back to freeRecs once built
	// (nothing keeps it: a session copies what it needs into prev), and
	// Requests and sessions come from slabs (see reqSlab), one allocation
	// per 64 instead of one each.
	freeRecs   []*mcRecord
	reqs       []Request
	sess       []mcSession
	blockArena []uint64 // newBlocks' chunk
}

// newRecord returns a zeroed record, reused if one was built.
func (m *Mooncake) newRecord() *mcRecord {
	if rec, ok := freelist.Pop(&m.freeRecs); ok {
		*rec = mcRecord{}
		return rec
	}
	return &mcRecord{}
}

// newRequest returns a zeroed Request from the slab.
func (m *Mooncake) newRequest() *Request { return fromSlab(&m.reqs) }

// newSess returns a zeroed session from the slab.
func (m *Mooncake) newSess() *mcSession { return fromSlab(&m.sess) }

// lineName is the name of a session inferred from (or made of) line n.
func lineName(n int) string {
	var b [24]byte
	return string(strconv.AppendInt(append(b[:0], 'L'), int64(n), 10))
}

// mcChain is the block array shared by the lines of one session_id.
// arr[:n] are the blocks of the session's latest line; arr's elements may
// be visible to emitted requests and are never rewritten (only appended
// to, beyond every emitted request's length).
type mcChain struct {
	arr      []uint64
	n        int
	lastSeen time.Duration
	compact  bool // referenced by the compact form: kept until the session's last line
}

type mcRecord struct {
	line      int
	at        time.Duration
	in, out   int
	blocks    []uint64
	bt        int
	session   string
	sessName  string
	hasSess   bool
	turn      int
	hasTurn   bool
	think     time.Duration
	hasThink  bool
	appendLen int
	hasAppend bool
	last      bool
}

type mcSession struct {
	idx      int32
	name     string
	turns    int
	lastTurn int
	prev     prevTurn
	arrival  time.Duration
	lastSeen time.Duration
	key      uint64
	keyed    bool
}

// NewMooncake reads a Mooncake JSONL trace from r (name is used in errors).
func NewMooncake(r io.Reader, name string, opts LoadOptions) (*Mooncake, error) {
	s, err := newStream[*mcRecord](name, opts, 512)
	if err != nil {
		return nil, err
	}
	return &Mooncake{
		stream: s, lr: newLineReader(r),
		sessions: map[string]*mcSession{},
		inferred: map[uint64]*mcSession{},
		chains:   map[string]*mcChain{},
	}, nil
}

// Next implements Source.
func (m *Mooncake) Next() (*Request, error) {
	return m.next(m.read, m.release)
}

// release builds a request from a record the reorder window released and
// recycles the record; a record that fails to build is skipped (nil, nil)
// under SkipBad.
func (m *Mooncake) release(rec *mcRecord) (*Request, error) {
	r, err := m.build(rec)
	m.freeRecs = append(m.freeRecs, rec)
	if err != nil && m.opts.SkipBad {
		m.skipped++
		return nil, nil
	}
	return r, err
}

// read parses one line into the reorder buffer.
func (m *Mooncake) read() error {
	line, ok, err := m.readLine(m.lr)
	if !ok {
		return err
	}
	m.badSess, m.badKnown = "", false
	rec, err := m.parse(line)
	if err != nil {
		if m.opts.SkipBad {
			m.skipped++
			// Later compact lines may refer to this one: forget its
			// session's blocks (every session's, when the line's session
			// is unknown) so that they fail instead of resolving against
			// an older line.
			switch {
			case !m.badKnown:
				clear(m.chains)
			case m.badHas:
				delete(m.chains, m.badSess)
			}
			return nil
		}
		return locate(m.name, m.lr.line, "", err)
	}
	m.q.push(rec.at, rec)
	return nil
}

// parse decodes and validates one line. The fast scanner handles the
// plain shape of a record; every other line (and every malformed one) goes
// through encoding/json, so accepted records, rejected ones and error texts
// are those of encoding/json (FuzzMooncakeDecoders checks it).
func (m *Mooncake) parse(line []byte) (*mcRecord, error) {
	f := &m.fields
	if m.slow || !f.scan(line, m.ids, m.newIDs) {
		if err := f.decodeSlow(line); err != nil {
			return nil, err
		}
	} else { // keep the scratch arrays, grown
		if f.hashIDs != nil {
			m.ids = f.hashIDs
		}
		if f.newHashIDs != nil {
			m.newIDs = f.newHashIDs
		}
	}
	return m.record(f)
}

func (m *Mooncake) build(rec *mcRecord) (*Request, error) {
	if !m.based {
		m.base, m.based = rec.at, true
	}
	arrival := rec.at - m.base
	r := m.newRequest()
	*r = Request{
		Arrival: arrival, InputLen: rec.in, OutputLen: rec.out,
		Blocks: rec.blocks, BlockTokens: rec.bt, AppendLen: rec.in, Last: rec.last,
	}
	var s *mcSession
	switch {
	case rec.hasSess:
		m.exp.expire(rec.at-m.opts.idle(), func(at time.Duration, k string) {
			if old := m.sessions[k]; old != nil && old.lastSeen == at {
				delete(m.sessions, k)
			}
		})
		s = m.sessions[rec.session]
		if s != nil && rec.hasTurn && rec.turn <= s.lastTurn {
			return nil, locate(m.name, rec.line, "", badField("turn", "%d does not follow turn %d of session %q", rec.turn, s.lastTurn, rec.session))
		}
		if s == nil {
			s = m.newSess()
			s.idx, s.name, s.lastTurn = m.newSession(), rec.sessName, -1
			m.sessions[rec.session] = s
		}
		if rec.hasTurn {
			s.lastTurn = rec.turn
		}
		if m.opts.idle() > 0 {
			m.exp.push(rec.at, rec.session)
		}
	case m.opts.InferSessions:
		m.iexp.expire(rec.at-m.opts.idle(), func(at time.Duration, old *mcSession) {
			if old.lastSeen == at && old.keyed && m.inferred[old.key] == old {
				delete(m.inferred, old.key)
				old.keyed = false
			}
		})
		full := min(len(rec.blocks), rec.in/rec.bt)
		for i := full - 1; i >= 0 && s == nil; i-- {
			if c := m.inferred[rec.blocks[i]]; c != nil && c.prev.bt == rec.bt && min(len(c.prev.blocks), c.prev.in/c.prev.bt) == i+1 {
				s = c
			}
		}
		if s == nil {
			s = m.newSess()
			s.idx, s.name = m.newSession(), lineName(rec.line)
		} else if s.keyed && m.inferred[s.key] == s {
			delete(m.inferred, s.key)
			s.keyed = false
		}
		if full > 0 {
			s.key, s.keyed = rec.blocks[full-1], true
			m.inferred[s.key] = s
		}
		if m.opts.idle() > 0 {
			m.iexp.push(rec.at, s)
		}
	default:
		r.Session = m.newSession()
		r.SessionName = lineName(rec.line)
		return r, nil
	}
	r.Session, r.SessionName, r.Turn = s.idx, s.name, s.turns
	if s.turns > 0 {
		if rec.hasThink {
			r.Think = rec.think
		} else {
			r.Think = max(0, arrival-s.arrival-time.Duration(s.prev.out)*nominalTokenTime)
		}
		if rec.hasAppend {
			r.AppendLen = rec.appendLen
		} else {
			r.AppendLen = appendLen(rec.in, rec.blocks, rec.bt, &s.prev)
		}
	}
	s.turns++
	s.prev = prevTurn{in: rec.in, out: rec.out, blocks: rec.blocks, bt: rec.bt}
	s.arrival = arrival
	s.lastSeen = rec.at
	return r, nil
}

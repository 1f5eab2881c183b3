package workload

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pdemu/pdemu/internal/minheap"
	"github.com/pdemu/pdemu/internal/splitmix"

	"github.com/pdemu/pdemu/internal/regular"
)

// ClaudeCode replays Claude Code agent sessions recorded by kv-cache-tester
// (`trace_*.json`, one session per file; a directory is one workload, files
// in sorted order). A file holds `block_size` (64), `tool_tokens`,
// `system_tokens` and `requests[]` with `t` (s since the session start),
// `in`, `out`, `hash_ids` (session-local ids of full blocks), `think_time`
// (s between the previous response and this request) and `api_time` (s the
// request took); a request of type "subagent" has its own `t`, `agent_id`,
// `tool_tokens`, `system_tokens` and nested `requests[]` whose `t` is
// relative to the subagent's start.
//
// Decisions:
//   - Each subagent is a separate session (named "<file id>/<agent_id>")
//     whose turn 0 arrives at session start + subagent t (+ its own t). In
//     closed-loop replay it starts at that Arrival, independently of the
//     parent's progress (the Request type has no cross-session dependency).
//   - Session starts follow LoadOptions (all at 0, Poisson, or staggered
//     MaxConcurrent); the session's requests arrive at start + t.
//   - Think is think_time (derived from t and the predecessor's t+api_time
//     when absent); turn 0 of every session has Think 0.
//   - Blocks are the hash ids salted per file (ids are session-local) and
//     prefix-chained. With ShareSystemPrefix the first
//     ceil((tool_tokens+system_tokens)/block_size) blocks of the session's
//     first request (and the same ids at the same positions later) get
//     global ids keyed by tool_tokens (the tools part) and tool_tokens +
//     system_tokens (the rest), so sessions with the same tools and system
//     prompt share them.
//   - AppendLen is the prompt minus the previous turn's prompt+output when
//     the prompt extends the previous one, else minus the common prefix.
//
// A file is parsed when its session starts and released when its last
// request was emitted; its requests are kept compactly (each request only
// stores the hash ids after the prefix it shares with its predecessor), so
// memory is proportional to the active sessions.
type ClaudeCode struct {
	emitter
	name  string
	files []string
	load  func(i int) ([]byte, error)
	opts  LoadOptions
	plan  startPlan
	h     minheap.Heap[ccEntry] // by lessCCEntry
	seq   int64
	err   error
	ids   map[string]string // session id -> the file that declared it
	slow  bool              // tests: decode with encoding/json only
}

type ccEntry struct {
	at    time.Duration
	seq   int64
	file  int      // file to open when chain is nil
	chain *ccChain // chain whose next request arrives at at
}

// lessCCEntry orders entries by time, then sequence (a total order).
func lessCCEntry(a, b *ccEntry) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

// ccChain is one session (the main agent or one subagent) of a file.
type ccChain struct {
	name    string
	sess    int32 // -1 until its first request is emitted
	start   time.Duration
	reqs    []ccCompact
	next    int
	bt      int
	salt    uint64
	canon   []uint64 // local ids of the shared system prefix (ShareSystemPrefix)
	toolKey uint64
	sysKey  uint64
	toolBlk int // blocks made of tool tokens only
	// previous emitted request
	prev    prevTurn
	prevAt  time.Duration
	sharedN int
	turn    int
}

type ccCompact struct {
	at    time.Duration // from the chain start
	in    int
	out   int
	think time.Duration
	lcp   int      // local ids shared with the previous request
	tail  []uint64 // local ids after lcp
}

// ccFileJSON is a session document; R is ccReqJSON for the fast path
// (decode everything at once) or json.RawMessage to locate a bad request.
type ccFileJSON[R any] struct {
	ID           string   `json:"id"`
	BlockSize    *float64 `json:"block_size"`
	ToolTokens   *float64 `json:"tool_tokens"`
	SystemTokens *float64 `json:"system_tokens"`
	Requests     []R      `json:"requests"`
}

type ccReqJSON struct {
	T            *float64          `json:"t"`
	Type         *string           `json:"type"`
	In           *float64          `json:"in"`
	Out          *float64          `json:"out"`
	HashIDs      *idList           `json:"hash_ids"`
	Think        *float64          `json:"think_time"`
	API          *float64          `json:"api_time"`
	AgentID      *string           `json:"agent_id"`
	ToolTokens   *float64          `json:"tool_tokens"`
	SystemTokens *float64          `json:"system_tokens"`
	Requests     []json.RawMessage `json:"requests"`
}

// OpenClaudeCode opens a directory of trace_*.json session files (or a
// single session file).
func OpenClaudeCode(path string, opts LoadOptions) (*ClaudeCode, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	files := []string{path}
	if !fi.IsDir() { // refused now, not at the first Next
		f, err := regular.Open(path)
		if err != nil {
			return nil, fmt.Errorf("workload: %w", err)
		}
		f.Close()
	}
	if fi.IsDir() {
		if files, err = claudeFiles(path); err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("workload: %s: no trace_*.json files", path)
		}
	}
	return newClaudeCode(path, files, func(i int) ([]byte, error) { return readBounded(files[i]) }, opts), nil
}

// NewClaudeCodeSession reads a single session document from r (name is
// used in errors and as the fallback session name).
func NewClaudeCodeSession(r io.Reader, name string, opts LoadOptions) (*ClaudeCode, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("workload: %s: %w", name, err)
	}
	return newClaudeCode(name, []string{name}, func(int) ([]byte, error) { return data, nil }, opts), nil
}

func newClaudeCode(name string, files []string, load func(int) ([]byte, error), opts LoadOptions) *ClaudeCode {
	c := &ClaudeCode{
		emitter: emitter{max: opts.MaxRequests},
		name:    name, files: files, load: load, opts: opts,
		plan: newStartPlan(opts),
	}
	c.h.Less = lessCCEntry
	c.h.Push(ccEntry{at: c.plan.next(), seq: c.nextSeq(), file: 0})
	return c
}

// Close implements io.Closer (files are read whole when a session starts).
func (c *ClaudeCode) Close() error { return nil }

func (c *ClaudeCode) nextSeq() int64 { c.seq++; return c.seq }

// Next implements Source.
func (c *ClaudeCode) Next() (*Request, error) {
	if c.err != nil {
		return nil, c.err
	}
	if c.capped() {
		return nil, io.EOF
	}
	for c.h.Len() > 0 {
		e := c.h.Pop()
		if e.chain == nil {
			if err := c.open(e.file, e.at); err != nil {
				c.err = err
				return nil, err
			}
			continue
		}
		r := c.emit(e.chain)
		if ch := e.chain; ch.next < len(ch.reqs) {
			c.h.Push(ccEntry{at: satAdd(ch.start, ch.reqs[ch.next].at), seq: c.nextSeq(), chain: ch})
		}
		return c.stamp(r), nil
	}
	return nil, io.EOF
}

// open parses file i, whose session starts at start, and schedules the next file.
func (c *ClaudeCode) open(i int, start time.Duration) error {
	chains, dur, skipped, err := c.parseFile(i)
	c.skipped += skipped
	if err != nil {
		if !c.opts.SkipBad {
			return err
		}
		c.skipped++
		chains, dur = nil, 0
	}
	c.plan.opened(start, dur)
	for _, ch := range chains {
		ch.start = satAdd(ch.start, start)
		c.h.Push(ccEntry{at: satAdd(ch.start, ch.reqs[0].at), seq: c.nextSeq(), chain: ch})
	}
	if i+1 < len(c.files) {
		c.h.Push(ccEntry{at: max(start, c.plan.next()), seq: c.nextSeq(), file: i + 1})
	}
	return nil
}

func (c *ClaudeCode) parseFile(i int) (chains []*ccChain, dur time.Duration, skipped int, err error) {
	file := c.files[i]
	data, err := c.load(i)
	if err != nil {
		// An unreadable file (a symlink loop, a directory, no permission)
		// is bad input at a known place, like a malformed one.
		return nil, 0, 0, locate(file, 0, "", err)
	}
	var doc ccFileJSON[ccReqJSON]
	var errs []error
	var sc *ccScanner // the fast decoder (see ccscan.go); nil in tests' slow mode
	if !c.slow {
		sc = &ccScanner{b: data}
	}
	if sc == nil || !sc.doc(&doc) {
		doc = ccFileJSON[ccReqJSON]{}
		err = json.Unmarshal(data, &doc)
	}
	if err != nil {
		err = nil
		// Slow path: decode request by request to name the bad one.
		var raw ccFileJSON[json.RawMessage]
		if err := json.Unmarshal(data, &raw); err != nil {
			return nil, 0, 0, locate(file, 0, "", err)
		}
		doc = ccFileJSON[ccReqJSON]{ID: raw.ID, BlockSize: raw.BlockSize, ToolTokens: raw.ToolTokens, SystemTokens: raw.SystemTokens}
		if raw.Requests != nil {
			doc.Requests, errs = decodeReqs(sc, raw.Requests)
		}
	}
	if doc.Requests == nil {
		return nil, 0, 0, locate(file, 0, "", badField("requests", "missing"))
	}
	bt := 64
	if doc.BlockSize != nil {
		if bt, err = intField("block_size", doc.BlockSize, 1); err != nil {
			return nil, 0, 0, locate(file, 0, "", err)
		}
	}
	if c.opts.BlockTokens > 0 {
		bt = c.opts.BlockTokens
	}
	tool, sys := 0, 0
	if doc.ToolTokens != nil {
		if tool, err = intField("tool_tokens", doc.ToolTokens, 0); err != nil {
			return nil, 0, 0, locate(file, 0, "", err)
		}
	}
	if doc.SystemTokens != nil {
		if sys, err = intField("system_tokens", doc.SystemTokens, 0); err != nil {
			return nil, 0, 0, locate(file, 0, "", err)
		}
	}
	id := doc.ID
	if id == "" {
		id = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	p := &ccParser{file: file, bt: bt, skipBad: c.opts.SkipBad, salt: splitmix.Mix64(c.opts.Seed ^ fnv64(id) ^ uint64(i)*0x9e3779b97f4a7c15), sc: sc}
	if prev, dup := c.ids[id]; dup {
		return nil, 0, 0, locate(file, 0, "", badField("id", "session id %q is also the id of %s; session names must be unique", id, prev))
	}
	if c.ids == nil {
		c.ids = map[string]string{}
	}
	c.ids[id] = file
	if err := p.chain(id, "requests", doc.Requests, errs, 0, tool, sys, c.opts.ShareSystemPrefix); err != nil {
		return nil, 0, p.skipped, err
	}
	c.zeroOutputs += p.zeroOutputs
	return p.out, p.end, p.skipped, nil
}

// emit builds the chain's next request.
func (c *ClaudeCode) emit(ch *ccChain) *Request {
	q := &ch.reqs[ch.next]
	ch.next++
	if ch.sess < 0 {
		ch.sess = c.newSession()
	}
	n := q.lcp + len(q.tail)
	blocks := make([]uint64, n)
	lcp := min(q.lcp, len(ch.prev.blocks))
	copy(blocks, ch.prev.blocks[:lcp])
	shared := min(ch.sharedN, lcp)
	h := uint64(0)
	if lcp > 0 {
		h = blocks[lcp-1]
	}
	for i := lcp; i < n; i++ {
		id := q.tail[i-q.lcp]
		if i == shared && i < len(ch.canon) && ch.canon[i] == id {
			key := ch.sysKey
			if i < ch.toolBlk {
				key = ch.toolKey
			}
			h = chain(h, key+uint64(i))
			shared++
		} else {
			h = chain(h, splitmix.Mix64(ch.salt^id))
		}
		blocks[i] = h
	}
	r := &Request{
		Session: ch.sess, SessionName: ch.name, Turn: ch.turn,
		Arrival: satAdd(ch.start, q.at), InputLen: q.in, OutputLen: q.out,
		Blocks: blocks, BlockTokens: ch.bt, AppendLen: q.in,
	}
	if ch.turn > 0 {
		r.Think = q.think
		r.AppendLen = appendLen(q.in, blocks, ch.bt, &ch.prev)
	}
	ch.turn++
	ch.prev = prevTurn{in: q.in, out: q.out, blocks: blocks, bt: ch.bt}
	ch.sharedN = shared
	q.tail = nil // release memory as we go
	if ch.next == len(ch.reqs) {
		ch.reqs = nil
		ch.prev = prevTurn{}
	}
	return r
}

// startPlan computes session start times (see LoadOptions).
type startPlan struct {
	rate  float64
	conc  int
	rng   *rand.Rand
	k     int
	last  time.Duration
	slots minheap.Heap[time.Duration] // running sessions' end times
}

func newStartPlan(o LoadOptions) startPlan {
	return startPlan{rate: o.SessionRate, conc: o.MaxConcurrent, rng: rand.New(rand.NewPCG(o.Seed, 0x5e55_10e5_7a27))}
}

// next returns the start of the next session.
func (p *startPlan) next() time.Duration {
	k := p.k
	p.k++
	switch {
	case p.rate > 0:
		if k > 0 {
			gap := min(p.rng.ExpFloat64()/p.rate*float64(time.Second), float64(100*365*24*time.Hour))
			p.last = satAdd(p.last, time.Duration(gap))
		}
	case p.conc > 0 && k >= p.conc && p.slots.Len() > 0:
		p.last = max(p.last, p.slots.Pop())
	}
	return p.last
}

// opened records the recorded duration of a session that started.
func (p *startPlan) opened(start, dur time.Duration) {
	if p.conc <= 0 {
		return
	}
	if p.slots.Less == nil {
		p.slots.Less = lessDuration
	}
	p.slots.Push(satAdd(start, dur))
}

func lessDuration(a, b *time.Duration) bool { return *a < *b }

// readBounded reads a whole trace file of at most maxFileBytes.
func readBounded(name string) ([]byte, error) {
	data, over, err := regular.ReadAll(name, maxFileBytes)
	if over {
		return nil, fmt.Errorf("the file is over %d bytes, the limit of one trace document", maxFileBytes)
	}
	return data, err
}

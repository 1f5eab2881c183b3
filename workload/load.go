package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Trace format names understood by Open.
const (
	FormatMooncake   = "mooncake"    // Mooncake FAST'25 JSONL (timestamp ms, 512-token hash_ids)
	FormatBailian    = "bailian"     // Qwen Bailian JSONL (chat_id/parent_chat_id chains, 16-token hash_ids)
	FormatClaudeCode = "claude-code" // kv-cache-tester Claude Code sessions, a directory of trace_*.json
	FormatAzure      = "azure"       // Azure LLM inference CSV (TIMESTAMP, ContextTokens, GeneratedTokens)
	FormatTraceLab   = "tracelab"    // TraceLab sanitized round traces (JSONL)
)

// Formats returns the trace format names Open accepts, sorted.
func Formats() []string {
	return []string{FormatAzure, FormatBailian, FormatClaudeCode, FormatMooncake, FormatTraceLab}
}

// canonicalFormat maps a user-given format name (case-insensitive, a few
// aliases) to one of the Format constants.
func canonicalFormat(f string) (string, bool) {
	switch strings.ToLower(strings.TrimSpace(f)) {
	case "mooncake":
		return FormatMooncake, true
	case "bailian", "qwen", "qwen-bailian":
		return FormatBailian, true
	case "claude-code", "claudecode", "claude_code", "weka", "weka-claude-code":
		return FormatClaudeCode, true
	case "azure", "azure-2023", "azure-csv":
		return FormatAzure, true
	case "tracelab":
		return FormatTraceLab, true
	}
	return "", false
}

func unknownFormat(f string) error {
	return fmt.Errorf("workload: unknown trace format %q (known formats: %s)", f, strings.Join(Formats(), ", "))
}

// LoadOptions tunes the trace loaders. The zero value is a strict, complete
// load with each format's defaults.
type LoadOptions struct {
	// SkipBad drops malformed records (see Skipper) instead of failing on
	// the first one.
	SkipBad bool
	// MaxRequests stops the source (io.EOF) after this many requests; 0
	// means all.
	MaxRequests int
	// BlockTokens overrides the block size. For formats that carry hashes
	// (mooncake: 512, bailian: 16, claude-code: the file's block_size) it
	// declares what the hash ids cover; for formats without hashes (azure,
	// tracelab) it is the size of the synthesized blocks (default 16).
	BlockTokens int
	// FullBlocks drops a trailing hash id that covers a partial block
	// (mooncake and bailian hash ceil(input/B) blocks), so that Blocks holds
	// full blocks only, as request.go describes. Off by default to keep the
	// published statistics (Mooncake's ideal reuse 0.640 becomes 0.659).
	FullBlocks bool
	// Seed salts synthesized hashes and drives randomized session starts.
	Seed uint64

	// Session starts for per-session formats (claude-code, tracelab). By
	// default every session starts at time 0 (tracelab: see TraceTime).
	// SessionRate > 0 starts sessions as a Poisson process with this mean
	// rate (sessions per second), in file order. MaxConcurrent > 0 starts
	// sessions so that at most that many overlap in the trace's own
	// timeline: session k starts when the earliest of the running sessions
	// ends (its last request's arrival plus its recorded api time). That is
	// a staggered start computed from the recorded durations, not a live
	// limit: in closed-loop replay, where real durations differ, the
	// number of concurrently active sessions can differ from the cap. Set
	// at most one of the two.
	SessionRate   float64
	MaxConcurrent int
	// TraceTime (tracelab) keeps each session's recorded wall-clock start
	// (relative to the earliest round of the file) instead of starting all
	// sessions at 0; it cannot be combined with SessionRate/MaxConcurrent.
	TraceTime bool
	// ShareSystemPrefix gives the tools+system prompt prefix global block
	// ids so that sessions share it (claude-code: the first
	// ceil((tool_tokens+system_tokens)/block_size) blocks; tracelab: the
	// prefix_tokens of round 0, keyed by provider and model). Off, hash
	// ids stay session-local as published.
	ShareSystemPrefix bool

	// ReorderWindow lets streaming formats (mooncake, bailian, azure) accept
	// records that are out of timestamp order by at most this much: records
	// are held in a bounded buffer and emitted sorted. A record earlier than
	// one already emitted is a bad record. Default 0: the file must be
	// sorted.
	ReorderWindow time.Duration
	// SessionIdle bounds the memory of formats whose sessions are only
	// implied by later records (bailian parent chains, mooncake session_id
	// or InferSessions): a session not seen for this long (trace time) is
	// forgotten, and a later record naming it starts a new session. 0 means
	// the default of one hour; negative keeps every session forever.
	SessionIdle time.Duration
	// InferSessions (mooncake without session_id) makes a request whose
	// hash_ids extend the full-block prompt of the latest turn of an
	// earlier, still-live inferred session the next turn of that session,
	// instead of a session of its own.
	InferSessions bool
}

func (o LoadOptions) idle() time.Duration {
	if o.SessionIdle == 0 {
		return time.Hour
	}
	return o.SessionIdle
}

func (o LoadOptions) validate() error {
	if o.MaxRequests < 0 {
		return fmt.Errorf("workload: LoadOptions.MaxRequests %d must be >= 0", o.MaxRequests)
	}
	if o.BlockTokens < 0 {
		return fmt.Errorf("workload: LoadOptions.BlockTokens %d must be >= 0", o.BlockTokens)
	}
	if o.ReorderWindow < 0 {
		return fmt.Errorf("workload: LoadOptions.ReorderWindow %v must be >= 0", o.ReorderWindow)
	}
	if o.SessionRate < 0 || math.IsNaN(o.SessionRate) || math.IsInf(o.SessionRate, 0) {
		return fmt.Errorf("workload: LoadOptions.SessionRate %v must be a finite rate >= 0", o.SessionRate)
	}
	if o.MaxConcurrent < 0 {
		return fmt.Errorf("workload: LoadOptions.MaxConcurrent %d must be >= 0", o.MaxConcurrent)
	}
	n := 0
	for _, set := range []bool{o.SessionRate > 0, o.MaxConcurrent > 0, o.TraceTime} {
		if set {
			n++
		}
	}
	if n > 1 {
		return errors.New("workload: set at most one of LoadOptions.SessionRate, MaxConcurrent and TraceTime")
	}
	return nil
}

// Skipper is implemented by every loader: Skipped is the number of bad
// records (lines, requests or files) dropped because of LoadOptions.SkipBad.
type Skipper interface{ Skipped() int }

// RecordError describes a bad trace record.
type RecordError struct {
	File  string // file name as given
	Line  int    // 1-based line for line-oriented files, 0 otherwise
	Index string // position inside a JSON document, e.g. "requests[3]"
	Field string // offending field; "" when the whole record is bad
	Err   error
}

// Error formats as `file:line: field "input_length": reason` (or
// `file: requests[3]: field "in": reason` for JSON documents).
func (e *RecordError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Index != "" {
		b.WriteString(": ")
		b.WriteString(e.Index)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %q", e.Field)
	}
	b.WriteString(": ")
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString("bad record")
	}
	return b.String()
}

// Unwrap returns the underlying cause.
func (e *RecordError) Unwrap() error { return e.Err }

// fieldErr is a validation failure of one field, located later.
type fieldErr struct {
	field string
	err   error
}

func (e *fieldErr) Error() string { return fmt.Sprintf("field %q: %v", e.field, e.err) }

func badField(field, format string, args ...any) error {
	return &fieldErr{field: field, err: fmt.Errorf(format, args...)}
}

// locate turns a parse/validation error into a RecordError.
func locate(file string, line int, index string, err error) error {
	re := &RecordError{File: file, Line: line, Index: index, Err: err}
	var fe *fieldErr
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &fe):
		re.Field, re.Err = fe.field, fe.err
	case errors.As(err, &te):
		re.Field = te.Field
		re.Err = fmt.Errorf("cannot use JSON %s as %s", te.Value, te.Type)
	}
	return re
}

// maxTokens caps every token count (16.7 M): larger values are bad records,
// which also bounds the memory a single synthesized request can take.
const maxTokens = 1 << 24

// satAdd adds durations, saturating instead of overflowing.
func satAdd(a, b time.Duration) time.Duration {
	s := a + b
	switch {
	case b > 0 && s < a:
		return math.MaxInt64
	case b < 0 && s > a:
		return math.MinInt64
	}
	return s
}

// intField validates an optional JSON number as an integer in [lo, maxTokens].
func intField(name string, v *float64, lo int) (int, error) {
	if v == nil {
		return 0, badField(name, "missing")
	}
	f := *v
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) {
		return 0, badField(name, "%v is not an integer", f)
	}
	if f < float64(lo) || f > maxTokens {
		return 0, badField(name, "%v out of range [%d, %d]", f, lo, maxTokens)
	}
	return int(f), nil
}

// outputField reads an output length: negative is an error, 0 (cancelled
// requests in real traces) is raised to 1 so that OutputLen >= 1 holds.
func outputField(name string, v *float64) (int, error) {
	n, err := intField(name, v, 0)
	return max(n, 1), err
}

// durField converts a non-negative number of unit to a Duration.
func durField(name string, v float64, unit time.Duration) (time.Duration, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, badField(name, "%v is not finite", v)
	}
	d := v * float64(unit)
	if math.Abs(d) > float64(100*365*24*time.Hour) {
		return 0, badField(name, "%v out of range", v)
	}
	return time.Duration(math.Round(d)), nil
}

// checkBlocks validates the number of hash ids against the prompt length:
// at most ceil(in/bt) (traces such as Mooncake also hash the last, partial
// block).
func checkBlocks(field string, n, in, bt int) error {
	if limit := (in + bt - 1) / bt; n > limit {
		return badField(field, "%d blocks of %d tokens exceed the %d-token prompt", n, bt, in)
	}
	return nil
}

// lineReader reads lines of any length (up to maxLine) and counts them.
type lineReader struct {
	br   *bufio.Reader
	buf  []byte
	line int
	err  error
}

const maxLine = 256 << 20

func newLineReader(r io.Reader) *lineReader {
	if br, ok := r.(*bufio.Reader); ok {
		return &lineReader{br: br}
	}
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next non-blank line (without the newline) or io.EOF. The
// slice is valid until the next call.
func (l *lineReader) next() ([]byte, error) {
	for {
		if l.err != nil {
			return nil, l.err
		}
		l.buf = l.buf[:0]
		for {
			frag, err := l.br.ReadSlice('\n')
			l.buf = append(l.buf, frag...)
			if err == bufio.ErrBufferFull {
				if len(l.buf) > maxLine {
					l.line++
					l.err = fmt.Errorf("line %d longer than %d bytes", l.line, maxLine)
					return nil, l.err
				}
				continue
			}
			if err != nil {
				if err != io.EOF {
					l.err = err
					return nil, err
				}
				l.err = io.EOF
				if len(l.buf) == 0 {
					return nil, io.EOF
				}
			}
			break
		}
		l.line++
		b := bytes.TrimSpace(l.buf)
		if len(b) == 0 {
			continue
		}
		return b, nil
	}
}

// emitter holds the bookkeeping shared by every loader: dense IDs, dense
// session indexes in order of first appearance, the MaxRequests cap and
// the skipped-record counter.
type emitter struct {
	nextID      int64
	nextSession int32
	max         int
	skipped     int
}

func (e *emitter) capped() bool { return e.max > 0 && e.nextID >= int64(e.max) }

func (e *emitter) newSession() int32 {
	s := e.nextSession
	e.nextSession++
	return s
}

func (e *emitter) stamp(r *Request) *Request {
	r.ID = e.nextID
	e.nextID++
	return r
}

// Skipped implements Skipper.
func (e *emitter) Skipped() int { return e.skipped }

// reorder is a bounded buffer that emits records sorted by time, holding
// each one until a record at least window later was read (or input ended).
type reorder[T any] struct {
	window  time.Duration
	h       []timed[T]
	seq     int64
	maxSeen time.Duration
	seen    bool
	lastOut time.Duration
	out     bool
}

type timed[T any] struct {
	at  time.Duration
	seq int64
	v   T
}

func (q *reorder[T]) less(i, j int) bool {
	if q.h[i].at != q.h[j].at {
		return q.h[i].at < q.h[j].at
	}
	return q.h[i].seq < q.h[j].seq
}

// tooLate reports whether a record at time at can no longer be emitted in order.
func (q *reorder[T]) tooLate(at time.Duration) bool { return q.out && at < q.lastOut }

func (q *reorder[T]) push(at time.Duration, v T) {
	if !q.seen || at > q.maxSeen {
		q.maxSeen, q.seen = at, true
	}
	q.h = append(q.h, timed[T]{at: at, seq: q.seq, v: v})
	q.seq++
	for i := len(q.h) - 1; i > 0; {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q.h[i], q.h[p] = q.h[p], q.h[i]
		i = p
	}
}

// pop returns the earliest record if it is ready (or all input was read).
func (q *reorder[T]) pop(eof bool) (T, bool) {
	var zero T
	if len(q.h) == 0 || (!eof && q.h[0].at+q.window > q.maxSeen) {
		return zero, false
	}
	top := q.h[0]
	n := len(q.h) - 1
	q.h[0] = q.h[n]
	q.h[n] = timed[T]{}
	q.h = q.h[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && q.less(l, m) {
			m = l
		}
		if r < n && q.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		q.h[i], q.h[m] = q.h[m], q.h[i]
		i = m
	}
	q.lastOut, q.out = top.at, true
	return top.v, true
}

// expiry is a FIFO of (time, key) used to forget idle sessions. Entries are
// pushed in non-decreasing time order; stale entries (the key was seen again
// later) are recognised by the caller.
type expiry[K comparable] struct {
	q    []expEntry[K]
	head int
}

type expEntry[K comparable] struct {
	at  time.Duration
	key K
}

func (e *expiry[K]) push(at time.Duration, k K) {
	if e.head > 1024 && e.head*2 > len(e.q) {
		n := copy(e.q, e.q[e.head:])
		clear(e.q[n:])
		e.q = e.q[:n]
		e.head = 0
	}
	e.q = append(e.q, expEntry[K]{at: at, key: k})
}

// expire calls f for every entry older than before, oldest first.
func (e *expiry[K]) expire(before time.Duration, f func(at time.Duration, k K)) {
	for e.head < len(e.q) && e.q[e.head].at < before {
		ent := e.q[e.head]
		e.q[e.head] = expEntry[K]{}
		e.head++
		f(ent.at, ent.key)
	}
}

// prevTurn remembers what appendLen needs of a session's previous turn.
type prevTurn struct {
	in, out int
	blocks  []uint64 // the previous request's Blocks (shared, never modified)
	bt      int
}

// appendLen computes AppendLen for a turn following prev: the prompt tokens
// not covered by the previous turn's prompt+output. When the new prompt
// starts with all full blocks of the previous prompt it is assumed to extend
// the whole previous context; otherwise only the common block prefix counts.
func appendLen(in int, blocks []uint64, bt int, prev *prevTurn) int {
	if prev == nil {
		return in
	}
	full := len(prev.blocks)
	if prev.bt > 0 {
		full = min(full, prev.in/prev.bt)
	}
	common := 0
	for common < full && common < len(blocks) && blocks[common] == prev.blocks[common] {
		common++
	}
	shared := common * bt
	if common == full {
		shared = prev.in + prev.out
	}
	return max(0, in-shared)
}

// chain is the prefix-chaining step used for synthesized hashes: the hash of
// block i depends on the hash of block i-1 and the block's content key.
func chain(prev, content uint64) uint64 {
	return mix64(prev*0x9e3779b97f4a7c15 ^ content ^ 0x2545f4914f6cdd1d)
}

// fnv64 hashes a string (FNV-1a).
func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// Detect guesses the trace format of path: a directory of trace_*.json is
// claude-code, a .csv (or a file whose first line names ContextTokens) is
// azure, a JSON document with "requests" is a single claude-code session,
// and for JSONL the keys of the first record decide (chat_id: bailian;
// session_id + round_index: tracelab; input_length + hash_ids: mooncake).
func Detect(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("workload: %w", err)
	}
	if fi.IsDir() {
		files, err := claudeFiles(path)
		if err != nil {
			return "", err
		}
		if len(files) == 0 {
			return "", fmt.Errorf("workload: %s: directory has no trace_*.json files (known formats: %s)", path, strings.Join(Formats(), ", "))
		}
		return FormatClaudeCode, nil
	}
	if strings.EqualFold(filepath.Ext(path), ".csv") {
		return FormatAzure, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("workload: %w", err)
	}
	defer f.Close()
	format, err := detectReader(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return "", fmt.Errorf("workload: %s: %w", path, err)
	}
	return format, nil
}

// detectReader peeks at the start of br (without consuming it).
func detectReader(br *bufio.Reader) (string, error) {
	head, _ := br.Peek(br.Size())
	if i := bytes.IndexByte(head, '\n'); i >= 0 && bytes.Contains(head[:i], []byte("ContextTokens")) {
		return FormatAzure, nil
	}
	keys := topLevelKeys(head)
	has := func(k string) bool { _, ok := keys[k]; return ok }
	switch {
	case has("chat_id") || has("parent_chat_id"):
		return FormatBailian, nil
	case has("round_index") || has("input_tokens_total") || has("newly_append_tokens"):
		return FormatTraceLab, nil
	case has("requests"):
		return FormatClaudeCode, nil
	case has("input_length") || has("hash_ids"):
		return FormatMooncake, nil
	}
	return "", fmt.Errorf("cannot detect the trace format from the first record (known formats: %s)", strings.Join(Formats(), ", "))
}

// topLevelKeys lists the keys of the JSON object at the start of b; it
// tolerates a truncated document and stops at the first error.
func topLevelKeys(b []byte) map[string]bool {
	keys := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return keys
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return keys
		}
		k, ok := t.(string)
		if !ok {
			return keys
		}
		keys[k] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return keys
		}
	}
	return keys
}

// Open opens a trace file (or claude-code directory) in the given format;
// format "" detects it (see Detect). The returned Source also implements
// io.Closer and Skipper; close it when done.
func Open(path, format string, opts LoadOptions) (Source, error) {
	if format == "" {
		f, err := Detect(path)
		if err != nil {
			return nil, err
		}
		format = f
	}
	c, ok := canonicalFormat(format)
	if !ok {
		return nil, unknownFormat(format)
	}
	switch c {
	case FormatMooncake:
		return asSource(OpenMooncake(path, opts))
	case FormatBailian:
		return asSource(OpenBailian(path, opts))
	case FormatClaudeCode:
		return asSource(OpenClaudeCode(path, opts))
	case FormatAzure:
		return asSource(OpenAzure(path, opts))
	default:
		return asSource(OpenTraceLab(path, opts))
	}
}

// OpenReader reads a trace from r; name is used in error messages. It
// supports every format (claude-code: a single session document); format
// "" detects it from the first record. Nothing is closed by the Source.
func OpenReader(r io.Reader, name, format string, opts LoadOptions) (Source, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	if format == "" {
		f, err := detectReader(br)
		if err != nil {
			return nil, fmt.Errorf("workload: %s: %w", name, err)
		}
		format = f
	}
	c, ok := canonicalFormat(format)
	if !ok {
		return nil, unknownFormat(format)
	}
	switch c {
	case FormatMooncake:
		return asSource(NewMooncake(br, name, opts))
	case FormatBailian:
		return asSource(NewBailian(br, name, opts))
	case FormatClaudeCode:
		return asSource(NewClaudeCodeSession(br, name, opts))
	case FormatAzure:
		return asSource(NewAzure(br, name, opts))
	default:
		return asSource(NewTraceLab(br, name, opts))
	}
}

// asSource returns a nil interface (not a typed nil pointer) on error.
func asSource[T Source](s T, err error) (Source, error) {
	if err != nil {
		return nil, err
	}
	return s, nil
}

// fileCloser closes the file under a streaming loader.
type fileCloser struct{ f *os.File }

// Close closes the underlying file (idempotent).
func (c *fileCloser) Close() error {
	if c.f == nil {
		return nil
	}
	err := c.f.Close()
	c.f = nil
	return err
}

func claudeFiles(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "trace_*.json"))
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	sort.Strings(files)
	return files, nil
}

// idList is a JSON array of unsigned 64-bit hash ids, parsed by hand (the
// arrays dominate trace files; encoding/json's reflection path is ~10×
// slower). encoding/json has validated the syntax before UnmarshalJSON.
type idList []uint64

// UnmarshalJSON implements json.Unmarshaler.
func (l *idList) UnmarshalJSON(b []byte) error {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return badField("hash_ids", "must be an array of unsigned integers")
	}
	out := (*l)[:0]
	if out == nil {
		out = make([]uint64, 0, len(b)/6+1)
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		*l = out
		return nil
	}
	for k := 0; ; k++ {
		i = skipSpace(b, i)
		start := i
		var v uint64
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			d := uint64(b[i] - '0')
			if v > (math.MaxUint64-d)/10 {
				return badField("hash_ids", "element %d overflows 64 bits", k)
			}
			v = v*10 + d
			i++
		}
		if i == start || (i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E')) || (b[start] == '0' && i-start > 1) {
			end := start
			for end < len(b) && b[end] != ',' && b[end] != ']' {
				end++
			}
			return badField("hash_ids", "element %d (%.24s) is not an unsigned 64-bit integer", k, bytes.TrimSpace(b[start:end]))
		}
		out = append(out, v)
		i = skipSpace(b, i)
		if i >= len(b) {
			return badField("hash_ids", "unterminated array")
		}
		if b[i] == ']' {
			break
		}
		if b[i] != ',' {
			return badField("hash_ids", "unexpected %q in array", b[i])
		}
		i++
	}
	*l = out
	return nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

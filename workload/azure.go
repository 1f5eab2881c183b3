package workload

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/pdemu/pdemu/internal/splitmix"
)

// Azure streams an Azure LLM inference CSV trace (2023/2024 releases):
// columns `TIMESTAMP` (e.g. "2023-11-16 18:17:03.9799600", UTC; RFC 3339
// and plain seconds are accepted too), `ContextTokens`, `GeneratedTokens`,
// in any order, other columns ignored. The trace has neither sessions nor
// hashes: every request is its own session (named "L<line>") and gets
// unique, prefix-chained synthetic Blocks of LoadOptions.BlockTokens tokens
// (default 16), so it has no prefix reuse at all. Arrivals are rebased so
// that the first request arrives at 0.
type Azure struct {
	stream[azRecord]
	fileCloser
	cr    *csv.Reader
	ll    *lineLimit // under cr: bounds a record's size
	cols  [3]int     // TIMESTAMP, ContextTokens, GeneratedTokens
	base  time.Duration
	based bool
	salt  uint64
}

type azRecord struct {
	line    int
	at      time.Duration
	in, out int
}

// NewAzure reads an Azure CSV trace from r (name is used in errors); it
// reads the header at once.
func NewAzure(r io.Reader, name string, opts LoadOptions) (*Azure, error) {
	s, err := newStream[azRecord](name, opts, 16)
	if err != nil {
		return nil, err
	}
	ll := newLineLimit(r, maxLine)
	cr := csv.NewReader(ll)
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1
	a := &Azure{
		stream: s, cr: cr, ll: ll,
		salt: splitmix.Mix64(opts.Seed ^ 0xa2a2e0c5d1f3b7e1),
	}
	head, err := cr.Read()
	if err != nil {
		if err == io.EOF {
			err = errors.New("empty file")
		}
		return nil, fmt.Errorf("workload: %s: header: %w", name, err)
	}
	want := []string{"TIMESTAMP", "ContextTokens", "GeneratedTokens"}
	for i := range a.cols {
		a.cols[i] = -1
	}
	for c, h := range head {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		for i, w := range want {
			if strings.EqualFold(h, w) && a.cols[i] < 0 {
				a.cols[i] = c
			}
		}
	}
	for i, c := range a.cols {
		if c < 0 {
			return nil, fmt.Errorf("workload: %s:1: header has no %q column (want %s)", name, want[i], strings.Join(want, ", "))
		}
	}
	return a, nil
}

// Next implements Source.
func (a *Azure) Next() (*Request, error) {
	return a.next(a.read, func(rec azRecord) (*Request, error) { return a.build(rec), nil })
}

func (a *Azure) read() error {
	row, err := a.cr.Read()
	if err == io.EOF {
		a.eof = true
		return nil
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		if a.opts.SkipBad {
			a.skipped++
			return nil
		}
		return &RecordError{File: a.name, Line: pe.Line, Err: pe.Err}
	}
	if errors.Is(err, errLineTooLong) {
		return &RecordError{File: a.name, Line: a.ll.line, Err: err}
	}
	if err != nil {
		return fmt.Errorf("workload: %s: %w", a.name, err)
	}
	line, _ := a.cr.FieldPos(0) // a record without error has at least one field
	rec, err := a.parse(row, line)
	if err == nil && a.q.tooLate(rec.at) {
		err = badField("TIMESTAMP", "earlier than an already emitted record (file not sorted within the reorder window %v)", a.opts.ReorderWindow)
	}
	if err != nil {
		if a.opts.SkipBad {
			a.skipped++
			return nil
		}
		return locate(a.name, line, "", err)
	}
	a.q.push(rec.at, rec)
	return nil
}

func (a *Azure) parse(row []string, line int) (azRecord, error) {
	rec := azRecord{line: line}
	get := func(i int) (string, error) {
		c := a.cols[i]
		if c >= len(row) {
			return "", badField([]string{"TIMESTAMP", "ContextTokens", "GeneratedTokens"}[i], "missing (row has %d columns)", len(row))
		}
		return strings.TrimSpace(row[c]), nil
	}
	ts, err := get(0)
	if err != nil {
		return rec, err
	}
	if rec.at, err = parseAzureTime(ts); err != nil {
		return rec, badField("TIMESTAMP", "%v", err)
	}
	in, err := get(1)
	if err != nil {
		return rec, err
	}
	if rec.in, err = atoiField("ContextTokens", in, 0); err != nil {
		return rec, err
	}
	out, err := get(2)
	if err != nil {
		return rec, err
	}
	if rec.out, err = atoiField("GeneratedTokens", out, 0); err != nil {
		return rec, err
	}
	if rec.out == 0 {
		a.zeroOutputs++ // replayed as 1: see outputField
	}
	rec.out = max(rec.out, 1)
	return rec, nil
}

func atoiField(name, s string, lo int) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, badField(name, "%q is not an integer", s)
	}
	if n < lo || n > maxTokens {
		return 0, badField(name, "%d out of range [%d, %d]", n, lo, maxTokens)
	}
	return n, nil
}

// parseAzureTime parses "2006-01-02 15:04:05[.fffffff]" (UTC), RFC 3339,
// or a number of seconds, into a Duration since the Unix epoch.
func parseAzureTime(s string) (time.Duration, error) {
	for _, layout := range []string{"2006-01-02 15:04:05", time.RFC3339Nano} {
		if t, err := time.Parse(layout, s); err == nil {
			if t.Year() < 1971 || t.Year() > 2200 {
				return 0, fmt.Errorf("%q out of range", s)
			}
			return time.Duration(t.UnixNano()), nil
		}
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		d, err := durField("TIMESTAMP", f, time.Second)
		if err != nil {
			return 0, fmt.Errorf("%q out of range", s)
		}
		return d, nil
	}
	return 0, fmt.Errorf("%q is not a timestamp (want 2006-01-02 15:04:05.0000000)", s)
}

func (a *Azure) build(rec azRecord) *Request {
	if !a.based {
		a.base, a.based = rec.at, true
	}
	r := &Request{
		Session:     a.newSession(),
		SessionName: "L" + strconv.Itoa(rec.line),
		Arrival:     rec.at - a.base,
		InputLen:    rec.in,
		OutputLen:   rec.out,
		BlockTokens: a.bt,
		AppendLen:   rec.in,
		Blocks:      make([]uint64, rec.in/a.bt),
	}
	salt := splitmix.Mix64(a.salt ^ uint64(a.nextID+1)*0xd6e8feb86659fd93)
	var h uint64
	for i := range r.Blocks {
		h = chain(h, salt+uint64(i))
		r.Blocks[i] = h
	}
	return r
}

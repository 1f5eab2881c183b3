// Package report reads pdemu run directories (the files package output
// writes, plus params.json that compare adds) and turns them into a
// comparison table (compare.csv, compare.json) and one self-contained HTML
// report with SVG plots rendered by gonum/plot.
//
// Contract: CSV files are read by column name, never by position, so
// columns may be added to them. Only summary.json is required: the other
// files (per_request.csv, instances.csv, params.json, links.csv,
// router_windows.csv, faults.csv) and the optional TTFT-part columns of
// per_request.csv are used when present; a run without per_request.csv
// or instances.csv is left out of the plots they feed, and the page says
// so. Each run has a status (StatusOf: ok, failed, partial, error,
// empty); only ok runs are compared with, or can be, a baseline. Runs
// are grouped by workload (trace digest or path), each group with its
// own panels and baseline. summary.json's optional "slo" and "goodput"
// objects give the SLO columns (sloOf: "attainment",
// "session_attainment", "goodput_rps" or "requests_per_s", at the top
// of either object or one level down; shares in 0..1 or per cent). faults.csv's rows, when there are any,
// give the run's panel a fault table and bands on its time-series plots,
// and compare.csv the FaultColumns; without faults every output is as
// before. Given the same run directories, every function here
// produces the same bytes. The HTML names no external resource: it opens
// from disk, offline.
package report

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pdemu/pdemu/metrics"
)

// Params are the parameters of a run as compare records them in
// params.json: what was run, and what varied between the runs of a
// comparison.
type Params struct {
	Name        string            `json:"name"`
	Scenario    string            `json:"scenario"`
	Router      string            `json:"router,omitempty"`
	Set         []string          `json:"set,omitempty"`  // PATH=VALUE overrides, in the order given
	Seed        *uint64           `json:"seed,omitempty"` // nil: the scenario's own seed
	Trace       string            `json:"trace,omitempty"`
	Vars        map[string]string `json:"vars,omitempty"`
	MaxRequests int               `json:"max_requests,omitempty"`
	// Varied lists the parameters that differ between the runs of the
	// comparison ("scenario", "seed", or a --set path).
	Varied []string `json:"varied,omitempty"`
	// PlanIndex is the run's row in its plan (0-based), PlanSize the
	// plan's number of rows and PlanDigest identifies the plan (package
	// compare computes them): shards of one plan agree on all three, and
	// merging their run directories checks them.
	PlanIndex  *int   `json:"plan_index,omitempty"`
	PlanSize   int    `json:"plan_size,omitempty"`
	PlanDigest string `json:"plan_digest,omitempty"`
}

// ParamsFile is the name of the parameters file in a run directory.
const ParamsFile = "params.json"

// WriteParams writes p as dir/params.json.
func WriteParams(dir string, p Params) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ParamsFile), append(b, '\n'), 0o644)
}

// Table is a CSV file read by header name.
type Table struct {
	Header []string
	Rows   [][]string
	idx    map[string]int
	// floats caches columns parsed as numbers (see column); Rows must
	// not change once a column was read.
	floats map[string]floatColumn
}

type floatColumn struct {
	v   []float64
	err error
}

// Has reports whether the table has column name.
func (t *Table) Has(name string) bool {
	if t == nil {
		return false
	}
	_, ok := t.idx[name]
	return ok
}

// Str returns column name of row i ("" when absent).
func (t *Table) Str(i int, name string) string {
	j, ok := t.idx[name]
	if !ok || j >= len(t.Rows[i]) {
		return ""
	}
	return t.Rows[i][j]
}

// Float returns column name of row i as a number (0 when absent or empty;
// an error when the cell is not a number).
func (t *Table) Float(i int, name string) (float64, error) {
	s := t.Str(i, name)
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("row %d column %s: %w", i+2, name, err)
	}
	return v, nil
}

// readTable reads a CSV file with a header line. A missing file gives
// (nil, nil) when optional. keep, when not nil, names the only columns
// kept (the others are dropped as the file is read, so a big
// per_request.csv costs the memory of the columns the report uses).
func readTable(path string, optional bool, keep []string) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		if optional && errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReaderSize(f, 1<<16))
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	head, err := r.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s: empty file (no header)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var cols []int // positions kept, in file order
	wanted := map[string]bool{}
	for _, k := range keep {
		wanted[k] = true
	}
	t := &Table{idx: map[string]int{}}
	for i, h := range head {
		if keep != nil && !wanted[h] {
			continue
		}
		if _, dup := t.idx[h]; dup {
			continue // a repeated name: its first column
		}
		t.idx[h] = len(t.Header)
		t.Header = append(t.Header, h)
		cols = append(cols, i)
	}
	ends := make([]int, 0, len(cols)) // reused: where each kept cell ends in a line
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		// The kept cells share one copied string (rec is reused).
		n := 0
		for _, c := range cols {
			if c < len(rec) {
				n += len(rec[c])
			}
		}
		var sb strings.Builder
		sb.Grow(n)
		ends = ends[:0]
		for _, c := range cols {
			if c >= len(rec) {
				break // a short line: the cells it lacks read as ""
			}
			sb.WriteString(rec[c])
			ends = append(ends, sb.Len())
		}
		line := sb.String()
		row := make([]string, len(ends))
		start := 0
		for i, e := range ends {
			row[i] = line[start:e]
			start = e
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

// The columns the report reads of each per-run CSV file (nil: all).
var (
	requestColumns = append([]string{"arrival_ms", "ttft_ms", "e2e_ms", "mode", "d_worker",
		"append_tokens", "cached_tokens", "transfer_bytes", "failed"}, TTFTParts...)
	instanceColumns = []string{"t_ms", "worker", "kind", "kv_tokens", "queue"}
	linkColumns     = []string{"t_ms", "nic", "utilisation"}
)

// Summary is the part of summary.json the report uses.
type Summary struct {
	Scenario string `json:"scenario"`
	Policy   string `json:"policy"`
	Seed     uint64 `json:"seed"`
	// Partial, StoppedBy and Error say the run did not end cleanly
	// (interrupted, stopped on a bad record, ...); Error is absent from
	// older summaries.
	Partial   bool     `json:"partial"`
	StoppedBy string   `json:"stopped_by"`
	Error     string   `json:"error"`
	Warnings  []string `json:"warnings"`
	Trace     struct {
		Path   string `json:"path"`
		Digest string `json:"digest"`
	} `json:"trace"`
	Requests struct {
		Total       int            `json:"total"`
		Completed   int            `json:"completed"`
		Failed      int            `json:"failed"`
		FailReasons map[string]int `json:"fail_reasons"`
		Unfinished  int            `json:"unfinished"`
	} `json:"requests"`
	// SLO and Goodput are read when summary.json has them (see sloOf).
	SLO             json.RawMessage   `json:"slo"`
	Goodput         json.RawMessage   `json:"goodput"`
	TTFT            metrics.Quantiles `json:"ttft_ms"` // the type summary.json is written from
	E2E             metrics.Quantiles `json:"e2e_ms"`
	Modes           map[string]int    `json:"modes"`
	PrefillShare    float64           `json:"prefill_share"`
	EmulatedSeconds float64           `json:"emulated_seconds"`
	Workers         []struct {
		Name     string `json:"name"`
		Kind     string `json:"kind"`
		Requests int    `json:"requests"`
	} `json:"workers"`
	Router *struct {
		Migrations int `json:"migrations"`
		Blacklists int `json:"blacklists"`
		Fallbacks  int `json:"fallbacks"`
		Rejections int `json:"rejections"`
	} `json:"router"`
}

// Run is one run directory as read from disk.
type Run struct {
	Dir     string
	Name    string  // params.json's name, else the directory's base name
	Params  *Params // nil without params.json
	Summary Summary
	// Requests is per_request.csv, Instances instances.csv, Links
	// links.csv, RouterWindows router_windows.csv: each nil when the run
	// has no such file (a run kept with fewer outputs). Faults is
	// faults.csv (nil without the file; no rows for a run without faults).
	Requests, Instances, Links, RouterWindows, Faults *Table
	// Missing lists the per-run files the directory lacks of
	// per_request.csv and instances.csv, whose figures are then left out
	// (and the page says so).
	Missing []string
}

// Load reads the run directory dir. Only summary.json is required: a
// directory kept with fewer outputs gives a row from its summary and the
// figures its files allow.
func Load(dir string) (*Run, error) {
	r := &Run{Dir: dir, Name: filepath.Base(filepath.Clean(dir))}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return nil, fmt.Errorf("%s is not a pdemu run directory: %w", dir, err)
	}
	if err := json.Unmarshal(b, &r.Summary); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "summary.json"), err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, ParamsFile)); err == nil {
		var p Params
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ParamsFile), err)
		}
		r.Params = &p
		if p.Name != "" {
			r.Name = p.Name
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, f := range []struct {
		name     string
		dst      **Table
		optional bool
		keep     []string
	}{
		{"per_request.csv", &r.Requests, true, requestColumns},
		{"instances.csv", &r.Instances, true, instanceColumns},
		{"links.csv", &r.Links, true, linkColumns},
		{"router_windows.csv", &r.RouterWindows, true, nil},
		{"faults.csv", &r.Faults, true, nil},
	} {
		t, err := readTable(filepath.Join(dir, f.name), f.optional, f.keep)
		if err != nil {
			return nil, err
		}
		*f.dst = t
	}
	if r.Requests == nil {
		r.Missing = append(r.Missing, "per_request.csv")
	}
	if r.Instances == nil {
		r.Missing = append(r.Missing, "instances.csv")
	}
	return r, nil
}

// LoadAll loads every directory, in the order given.
func LoadAll(dirs []string) ([]*Run, error) { return mapAll(dirs, Load) }

// mapAll is f of every element of xs, in order; the first error stops it.
func mapAll[A, B any](xs []A, f func(A) (B, error)) ([]B, error) {
	out := make([]B, 0, len(xs))
	for _, x := range xs {
		y, err := f(x)
		if err != nil {
			return nil, err
		}
		out = append(out, y)
	}
	return out, nil
}

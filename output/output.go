// Package output writes a run's result (actors.Result) as the files of a
// run directory and judges it: Check turns a run that must not look clean
// (too many failed requests, a distorted wall clock) into an error that
// carries the process exit code.
//
// Contract:
//   - Write is deterministic (the same Result gives the same bytes) and
//     writes the same set of files for every policy (Files; header-only or
//     empty where a file does not apply). docs/OUTPUTS.md documents every
//     column and key, and a test checks the files of real runs against it.
//   - Every file is written atomically: to a temporary name in the same
//     directory, then renamed. summary.json, the marker of a run
//     directory, is renamed last.
//   - Write never mixes two runs: it refuses a directory that holds
//     another run's outputs unless WriteOptions.Force, which first removes
//     the files a pdemu run writes (Files) and nothing else: it renames
//     them to temporary names and writes the new files into them
//     (outDir), removing those it does not reuse.
package output

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/metrics"
)

// Files are the files of a run directory, in the order Write writes them
// (summary.json, the marker, last).
var Files = []string{
	"per_request.csv", "instances.csv", "links.csv", "router_windows.csv",
	"sessions.csv", "routing_log.jsonl", "faults.csv", "evictions.csv", "summary.json",
}

// Marker is the file that makes a directory a run directory.
const Marker = "summary.json"

// tmpPrefix starts the temporary names of files being written.
const tmpPrefix = ".pdemu-tmp-"

// WriteOptions adjust Write.
type WriteOptions struct {
	// Force clears the pdemu files of a previous run from the directory
	// first (files pdemu did not write are left alone).
	Force bool
	// Outputs, when not nil, are the only files written (ParseOutputs:
	// names from Files; summary.json is always written). summary.json
	// then lists them under outputs.written, so a reader knows the other
	// files were not asked for rather than lost.
	Outputs []string
}

// ErrRunDir is wrapped by Write's error when dir holds another run.
var ErrRunDir = errors.New("directory holds another run's outputs")

// Write writes res into dir, creating it if needed. res must hold its
// records (a run streamed to a Stream is written by Stream.Write).
func Write(dir string, res *actors.Result, opts WriteOptions) error {
	if res.Records == nil && res.Arrivals != nil {
		return errors.New("output: a streamed result (actors.Options.Records): write it with its Stream")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	d, err := prepare(dir, opts.Force)
	if err != nil {
		return err
	}
	recs := MergeUnfinished(res.Records, res.Unfinished)
	return writeRun(d, res, opts, runFiles{
		perRequest: atomic(d, func(w io.Writer) error { return metrics.WritePerRequest(w, recs) }),
		routingLog: atomic(d, func(w io.Writer) error { return metrics.WriteRoutingLog(w, recs) }),
		routerWindows: func(w io.Writer, window windowFn) error {
			return metrics.WriteRouterWindows(w, recs, res.RouterEvents, window())
		},
	})
}

// windowFn returns router_windows.csv's window.
type windowFn func() time.Duration

// runFiles are the files whose content depends on how the records were
// kept: per_request.csv and routing_log.jsonl are put in place by the
// function given their name; router_windows.csv is written by its
// function.
type runFiles struct {
	perRequest, routingLog func(name string) error
	// evictions, when set, writes evictions.csv (a stream's streamed rows).
	evictions     func(name string) error
	routerWindows func(w io.Writer, window windowFn) error
	// skip, when set, drops a file that is not written (a stream's
	// temporary per_request.csv or routing_log.jsonl).
	skip func(name string) error
}

// atomic returns the writing of a file named by its argument through
// writeAtomic.
func atomic(d *outDir, f func(w io.Writer) error) func(name string) error {
	return func(name string) error { return writeAtomic(d, name, f) }
}

// writeRun writes the files of res into the prepared d, in Files order,
// and drops the spares no file reused.
func writeRun(d *outDir, res *actors.Result, opts WriteOptions, rf runFiles) (err error) {
	defer func() { err = errors.Join(err, d.drop()) }()
	sum := res.Summary
	if sum.PdemuVersion == "" {
		sum.PdemuVersion = metrics.Version()
	}
	if sum.Vars == nil {
		sum.Vars = map[string]string{}
	}
	sum.Warnings = metrics.Warnings(sum) // whatever the caller set last (partial, clock, workers)
	if sum.Workers == nil {
		sum.Workers = []metrics.WorkerSummary{}
	}
	if sum.Balance == nil {
		sum.Balance = []metrics.Balance{}
	}
	if sum.SchemaVersion == 0 {
		sum.SchemaVersion = metrics.SchemaVersion
	}
	interval, rows, widened := metrics.InstancesPlan(len(res.Series), res.SampleInterval, res.End)
	window := metrics.RouterWindowFor(res.End, res.Arrivals.Resolution(), res.RouterEvents.Resolution()) // bounded (served) counts
	linkRows, linkDropped := res.Links.Rows()
	sum.Outputs = metrics.OutputInfo{
		InstancesIntervalMS: float64(interval.Microseconds()) / 1000, InstancesRows: rows, InstancesWidened: widened,
		LinksRows: linkRows, LinksDropped: linkDropped, RouterWindowMS: float64(window.Microseconds()) / 1000,
		Written: opts.Outputs,
	}
	caps := map[string]int{}
	for _, w := range sum.Workers {
		caps[w.Name] = w.CapKV
	}
	writers := map[string]func(io.Writer) error{
		"instances.csv":      func(w io.Writer) error { return metrics.WriteInstances(w, res.Series, interval, res.End, caps) },
		"links.csv":          func(w io.Writer) error { return metrics.WriteLinks(w, res.Links) },
		"router_windows.csv": func(w io.Writer) error { return rf.routerWindows(w, func() time.Duration { return window }) },
		"sessions.csv":       func(w io.Writer) error { return metrics.WriteSessions(w, res.Sessions) },
		"faults.csv":         func(w io.Writer) error { return metrics.WriteFaults(w, res.Faults) },
		"evictions.csv":      func(w io.Writer) error { return metrics.WriteEvictions(w, res.Evictions) },
		"summary.json":       func(w io.Writer) error { return metrics.WriteSummary(w, sum) },
	}
	for _, name := range Files {
		if name == Marker {
			// The renames so far made durable at once, before the marker's
			// (a directory sync per file cost ~1 % of a Mooncake run's CPU).
			if err := syncDir(d.path); err != nil {
				return err
			}
		}
		if !opts.keeps(name) {
			if rf.skip != nil {
				if err := rf.skip(name); err != nil {
					return err
				}
			}
			continue
		}
		var err error
		switch name {
		case "per_request.csv":
			err = rf.perRequest(name)
		case "routing_log.jsonl":
			err = rf.routingLog(name)
		case "evictions.csv":
			if rf.evictions != nil {
				err = rf.evictions(name)
			} else {
				err = writeAtomic(d, name, writers[name])
			}
		default:
			err = writeAtomic(d, name, writers[name])
		}
		if err != nil {
			return err
		}
	}
	return syncDir(d.path) // the marker's rename
}

// MergeUnfinished returns the records and the unfinished requests in
// request id order, the latter marked with State "unfinished".
func MergeUnfinished(recs, unfinished []metrics.Record) []metrics.Record {
	if len(unfinished) == 0 {
		return recs
	}
	out := make([]metrics.Record, 0, len(recs)+len(unfinished))
	out = append(out, recs...)
	for _, u := range unfinished {
		u.State = metrics.StateUnfinished
		out = append(out, u)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// CheckDir reports, before a run starts, whether Write would refuse dir:
// an ExitError (ExitBadInput) wrapping ErrRunDir when dir holds another
// run's outputs and force is false. A missing dir is fine.
func CheckDir(dir string, force bool) error {
	if force {
		return nil
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &ExitError{Code: ExitBadInput, Err: err}
	}
	ours := map[string]bool{}
	for _, f := range Files {
		ours[f] = true
	}
	var found []string
	for _, e := range ents {
		if ours[e.Name()] && !e.IsDir() {
			found = append(found, e.Name())
		}
	}
	if len(found) == 0 {
		return nil
	}
	return &ExitError{Code: ExitBadInput, Err: fmt.Errorf("%s: %w (%s); choose another --out or pass --force to replace them",
		dir, ErrRunDir, strings.Join(found, ", "))}
}

// prepare refuses (or, with force, clears) a directory that holds another
// run's outputs: force takes the previous run's files over for the new
// ones (outDir). Temporary files left by an interrupted Write are removed.
func prepare(dir string, force bool) (*outDir, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	d := &outDir{path: dir}
	ours := map[string]bool{}
	for _, f := range Files {
		ours[f] = true
	}
	var found []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return nil, err
			}
			continue
		}
		if ours[e.Name()] && !e.IsDir() {
			found = append(found, e.Name())
		}
	}
	if len(found) == 0 {
		return d, nil
	}
	if !force {
		return nil, &ExitError{Code: ExitBadInput, Err: fmt.Errorf("%s: %w (%s); choose another --out or pass --force to replace them",
			dir, ErrRunDir, strings.Join(found, ", "))}
	}
	for _, f := range found {
		if err := d.keep(f); err != nil {
			return nil, errors.Join(err, d.drop())
		}
	}
	return d, nil
}

// writeAtomic writes name in d through a temporary file in d, renamed
// into place once complete.
func writeAtomic(d *outDir, name string, f func(io.Writer) error) error {
	tmp, err := d.create(name)
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := f(tmp); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := d.seal(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(d.path, name)); err != nil {
		return err
	}
	ok = true
	return nil // writeRun syncs dir before and after the marker's rename
}

// syncDir makes the renames in dir durable. writeRun calls it twice:
// after every file but summary.json was renamed, and after summary.json
// (renamed last): a crash cannot then leave summary.json without the
// files renamed before it.
// File systems that cannot sync a directory are not an error.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return err
	}
	return nil
}

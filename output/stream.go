package output

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/metrics"
)

// DefaultReorderBytes bounds the records a Stream holds in memory while
// they wait for a lower request id to end; past it they spill to a
// temporary file in the run directory.
const DefaultReorderBytes = 32 << 20

// streamBlock is the size of the blocks a Stream writes its files in.
const streamBlock = 256 << 10

// Stream writes a run's per_request.csv and routing_log.jsonl as its
// requests end (it is the run's actors.Options.Records), then the other
// files with Write: a run's memory is then bounded by its requests in
// flight, not by its length, and the files are those output.Write writes
// for the same run, byte for byte.
//
// Records come in end order; a reorder buffer releases them in request id
// order (ids are dense from 0), holding at most ReorderBytes of them in
// memory and spilling sorted runs to a temporary file beyond that.
// Everything goes to temporary names in the directory until Write renames
// them into place (summary.json last), so a run that fails or is killed
// before Write leaves no run directory behind (Close removes the
// temporary files; the next Write or Stream on the directory removes those
// a killed process left).
type Stream struct {
	dir      *outDir
	per, log *os.File
	perW     *bufio.Writer
	logW     *bufio.Writer
	ro       *reorder
	row      []byte         // the row being encoded (reorder copies what it keeps)
	rec      metrics.Record // the record being encoded
	cli      metrics.ClientTimes
	err      error // the first write error: the run fails, Write reports it
	written  bool
	opts     WriteOptions
	client   bool // per_request.csv has metrics.ClientColumns
	// unfinishedCli: what the clients of requests whose record never came
	// saw (UnfinishedClient), for their unfinished rows.
	unfinishedCli map[int64]metrics.ClientTimes

	// evictions.csv, when the run streams its evictions (Eviction).
	evMu  sync.Mutex
	ev    *os.File
	evBuf *bufio.Writer
	evRow []byte // the row being encoded
	evErr error
}

// StreamOptions adjust NewStream.
type StreamOptions struct {
	WriteOptions
	// ReorderBytes bounds the records held in memory (0: DefaultReorderBytes).
	ReorderBytes int
	// Client adds metrics.ClientColumns to per_request.csv (a served run:
	// its records come through RecordClient; a Record's are empty).
	Client bool
}

// NewStream prepares dir for a run's outputs as Write does (refusing, or
// with Force clearing, another run's) and opens the temporary files.
func NewStream(dir string, opts StreamOptions) (*Stream, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	d, err := prepare(dir, opts.Force)
	if err != nil {
		return nil, err
	}
	s := &Stream{dir: d, opts: opts.WriteOptions, client: opts.Client}
	// A file --outputs leaves out is never written, not even to a
	// temporary file: a long run keeps no disk for it.
	var perW, logW io.Writer = io.Discard, io.Discard
	if s.opts.keeps("per_request.csv") {
		if s.per, err = d.create("per_request.csv"); err != nil {
			s.Close()
			return nil, err
		}
		perW = s.per
	}
	if s.opts.keeps("routing_log.jsonl") {
		if s.log, err = d.create("routing_log.jsonl"); err != nil {
			s.Close()
			return nil, err
		}
		logW = s.log
	}
	s.perW, s.logW = bufio.NewWriterSize(perW, streamBlock), bufio.NewWriterSize(logW, streamBlock)
	bound := opts.ReorderBytes
	if bound <= 0 {
		bound = DefaultReorderBytes
	}
	s.ro = newReorder(0, bound, s.emit, func() (*os.File, error) { return os.CreateTemp(dir, tmpPrefix+"spill-*") })
	hdr := metrics.AppendPerRequestHeader(nil)
	if s.client {
		hdr = append(metrics.AppendClientHeader(hdr[:len(hdr)-1]), '\n')
	}
	if _, err := s.perW.Write(hdr); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

var _ actors.RecordSink = (*Stream)(nil)

// Record adds an ended request's record (actors.RecordSink); with
// StreamOptions.Client its client columns are empty.
func (s *Stream) Record(r metrics.Record) error { return s.record(r, metrics.ClientTimes{}) }

// RecordClient adds an ended request's record with what its client saw
// (StreamOptions.Client; without it c is not written).
func (s *Stream) RecordClient(r metrics.Record, c metrics.ClientTimes) error {
	return s.record(r, c)
}

// UnfinishedClient keeps what the client of request id saw when the
// request's record never came (an unfinished request of a partial run):
// Write gives its unfinished row these client columns (StreamOptions.Client).
func (s *Stream) UnfinishedClient(id int64, c metrics.ClientTimes) {
	if s.unfinishedCli == nil {
		s.unfinishedCli = map[int64]metrics.ClientTimes{}
	}
	s.unfinishedCli[id] = c
}

func (s *Stream) record(r metrics.Record, c metrics.ClientTimes) error {
	if s.err != nil {
		return s.err
	}
	s.rec = r // encoded from a field: &r would make every record escape to the heap
	s.row = metrics.AppendPerRequestRow(s.row[:0], &s.rec)
	if s.client {
		s.cli = c // as s.rec
		s.row = append(metrics.AppendClientFields(s.row[:len(s.row)-1], &s.cli), '\n')
	}
	if err := s.ro.add(r.ID, s.row, r.RouteLog); err != nil {
		s.err = err
		return err
	}
	return nil
}

// emit writes a record's row and routing-log line, in id order.
func (s *Stream) emit(_ int64, row, log []byte) error {
	if _, err := s.perW.Write(row); err != nil {
		return err
	}
	if len(log) == 0 {
		return nil
	}
	if _, err := s.logW.Write(log); err != nil {
		return err
	}
	return s.logW.WriteByte('\n')
}

// Eviction adds an evictions.csv row as it happens (the sink of
// cluster.StreamEvictions: safe for concurrent use). The file's rows are
// then in the order they came (each worker's in time order), followed at
// Write by the result's own Evictions (the workers that kept theirs).
func (s *Stream) Eviction(r metrics.EvictionRow) error {
	if !s.opts.keeps("evictions.csv") {
		return nil
	}
	s.evMu.Lock()
	defer s.evMu.Unlock()
	if s.evErr != nil {
		return s.evErr
	}
	if s.ev == nil {
		f, err := s.dir.create("evictions.csv")
		if err != nil {
			s.evErr = err
			return err
		}
		s.ev, s.evBuf = f, bufio.NewWriterSize(f, 64<<10)
		if _, err := s.evBuf.Write(metrics.AppendEvictionsHeader(nil)); err != nil {
			s.evErr = err
			return err
		}
	}
	s.evRow = metrics.AppendEvictionRow(s.evRow[:0], r)
	if _, err := s.evBuf.Write(s.evRow); err != nil {
		s.evErr = err
		return err
	}
	return nil
}

// finishEvictions writes rows after the streamed ones and flushes.
func (s *Stream) finishEvictions(rows []metrics.EvictionRow) error {
	s.evMu.Lock()
	defer s.evMu.Unlock()
	if s.evErr != nil {
		return s.evErr
	}
	for _, r := range rows {
		s.evRow = metrics.AppendEvictionRow(s.evRow[:0], r)
		if _, err := s.evBuf.Write(s.evRow); err != nil {
			return err
		}
	}
	return s.evBuf.Flush()
}

// Spilled is the number of sorted runs the reorder buffer spilled to disk.
func (s *Stream) Spilled() int { return s.ro.spilled }

// Write writes res, the result of the run whose records s received: the
// unfinished requests of a partial run join per_request.csv in id order
// (with the client columns UnfinishedClient gave),
// the other files are written as output.Write writes them, and every file
// is renamed into place, summary.json last. Call it once.
func (s *Stream) Write(res *actors.Result) error {
	if s.written {
		return errors.New("output: Stream.Write called twice")
	}
	s.written = true
	if s.err != nil {
		return s.err
	}
	arr := res.Arrivals
	if arr == nil {
		return errors.New("output: the result was not streamed to this Stream (actors.Options.Records)")
	}
	arr = arr.Clone()
	for _, u := range res.Unfinished {
		u.State = metrics.StateUnfinished
		arr.Add(&u)
		if err := s.record(u, s.unfinishedCli[u.ID]); err != nil {
			return err
		}
	}
	if err := s.ro.finish(); err != nil {
		return err
	}
	if err := errors.Join(s.ro.close(), s.perW.Flush(), s.logW.Flush()); err != nil {
		return err
	}
	rf := runFiles{
		perRequest: s.commit(&s.per), routingLog: s.commit(&s.log),
		skip: func(name string) error {
			f := &s.per
			if name == "routing_log.jsonl" {
				f = &s.log
			} else if name != "per_request.csv" {
				return nil
			}
			if *f == nil {
				return nil
			}
			(*f).Close()
			err := os.Remove((*f).Name())
			*f = nil
			return err
		},
		routerWindows: func(w io.Writer, window windowFn) error {
			return metrics.WriteRouterWindowsOf(w, arr, res.RouterEvents, window())
		},
	}
	s.evMu.Lock()
	streamed := s.ev != nil
	s.evMu.Unlock()
	if streamed {
		if err := s.finishEvictions(res.Evictions); err != nil {
			return err
		}
		rf.evictions = s.commit(&s.ev)
	}
	return writeRun(s.dir, res, s.opts, rf)
}

// commit returns the renaming of a finished temporary file to name.
func (s *Stream) commit(f **os.File) func(name string) error {
	return func(name string) error {
		tmp := *f
		if err := s.dir.seal(tmp); err != nil {
			return err
		}
		*f = nil
		if err := os.Rename(tmp.Name(), filepath.Join(s.dir.path, name)); err != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil // writeRun syncs the directory before and after the marker
	}
}

// Close removes the temporary files Write did not rename (all of them
// when the run never got to Write), and the previous run's files --force
// took over and no new file reused. Call it when done, Write or not.
func (s *Stream) Close() error {
	var errs []error
	s.evMu.Lock()
	defer s.evMu.Unlock()
	for _, f := range []**os.File{&s.per, &s.log, &s.ev} {
		if *f != nil {
			(*f).Close()
			if err := os.Remove((*f).Name()); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
			*f = nil
		}
	}
	if s.ro != nil {
		errs = append(errs, s.ro.close())
	}
	errs = append(errs, s.dir.drop())
	return errors.Join(errs...)
}

package output

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/pdemu/pdemu/internal/minheap"
)

// reorder turns entries added in any order (each request's per_request.csv
// row and routing_log.jsonl line, added as the request ends) into a
// stream in id order.
//
// Contract: emit sees every entry added exactly once, in increasing id
// order. An entry is emitted as soon as every lower id that will ever be
// added was (ids are dense from first; finish emits the rest, gaps
// skipped). Entries waiting for a lower id are kept in memory up to bound
// bytes; past it they are written, sorted, as one run to the spill file
// (created by newSpill on first need) and read back from it in order, a
// small buffer per run: memory stays within bound plus a buffer per run,
// whatever the disorder.
type reorder struct {
	next     int64
	bound    int
	emit     func(id int64, row, log []byte) error
	newSpill func() (*os.File, error)

	mem      pending // the entries waiting in memory
	memBytes int
	// chunk is what kept rows are copied into (keep): one allocation per
	// rowChunk bytes of rows instead of one per row. A chunk is freed when
	// its last row is emitted (or spilled), so the rows in memory may pin
	// up to a chunk each beyond their bytes when they wait long apart.
	chunk []byte

	spill    *os.File
	spillOff int64
	runs     minheap.Heap[*run] // by head id
	spilled  int                // runs written (tests check that spilling happened)
}

type entry struct {
	row, log []byte
	set      bool // held (pending's ring)
}

// runBuf is the read buffer of each spilled run.
const runBuf = 16 << 10

func newReorder(first int64, bound int, emit func(int64, []byte, []byte) error, newSpill func() (*os.File, error)) *reorder {
	return &reorder{next: first, bound: bound, emit: emit, newSpill: newSpill, mem: pending{lo: first}, runs: minheap.Heap[*run]{Less: lessRun}}
}

// add adds id's entry: row is copied when kept (the caller may reuse
// it), log is kept until emitted.
func (r *reorder) add(id int64, row, log []byte) error {
	if id < r.next {
		return fmt.Errorf("output: request %d written twice or after a later one was final", id)
	}
	if id == r.next {
		if err := r.emit(id, row, log); err != nil {
			return err
		}
		r.next++
		return r.drain()
	}
	r.mem.put(id, entry{row: r.keep(row), log: log})
	r.memBytes += len(row) + len(log) + 64 // the map's own share, roughly
	if r.memBytes > r.bound {
		return r.spillMem()
	}
	return nil
}

// rowChunk is the size of the chunks kept rows are copied into.
const rowChunk = 32 << 10

// keep returns a copy of row, cut from the current chunk and capped at its
// length.
func (r *reorder) keep(row []byte) []byte {
	n := len(row)
	if n > rowChunk/8 {
		return bytes.Clone(row)
	}
	if cap(r.chunk)-len(r.chunk) < n {
		r.chunk = make([]byte, 0, rowChunk)
	}
	at := len(r.chunk)
	r.chunk = append(r.chunk, row...)
	return r.chunk[at : at+n : at+n]
}

// drain emits the entries that are next, from memory or a run's head.
func (r *reorder) drain() error {
	for {
		if e, ok := r.mem.take(r.next); ok {
			r.memBytes -= len(e.row) + len(e.log) + 64
			if err := r.emit(r.next, e.row, e.log); err != nil {
				return err
			}
			r.next++
			continue
		}
		if r.runs.Len() > 0 && (*r.runs.Min()).id == r.next {
			if err := r.emitHead(); err != nil {
				return err
			}
			continue
		}
		return nil
	}
}

// emitHead emits the head of the first run and advances it.
func (r *reorder) emitHead() error {
	rn := *r.runs.Min()
	if err := r.emit(rn.id, rn.row, rn.log); err != nil {
		return err
	}
	r.next = rn.id + 1
	ok, err := rn.read()
	if err != nil {
		return err
	}
	if ok {
		r.runs.Fix(0)
	} else {
		r.runs.Pop()
	}
	return nil
}

// finish emits everything left in id order, skipping ids never added.
func (r *reorder) finish() error {
	ids := r.mem.ids()
	for len(ids) > 0 || r.runs.Len() > 0 {
		if r.runs.Len() > 0 && (len(ids) == 0 || (*r.runs.Min()).id < ids[0]) {
			if err := r.emitHead(); err != nil {
				return err
			}
			continue
		}
		e := r.mem.get(ids[0])
		if err := r.emit(ids[0], e.row, e.log); err != nil {
			return err
		}
		r.next = ids[0] + 1
		ids = ids[1:]
	}
	r.mem.reset()
	r.memBytes = 0
	return nil
}

// spillMem writes the entries in memory, sorted, as a run of the spill
// file: per entry the uvarints id, len(row), len(log), then row and log.
func (r *reorder) spillMem() error {
	if r.spill == nil {
		f, err := r.newSpill()
		if err != nil {
			return err
		}
		r.spill = f
	}
	ids := r.mem.ids()
	w := bufio.NewWriterSize(io.NewOffsetWriter(r.spill, r.spillOff), 64<<10)
	var hdr [3 * binary.MaxVarintLen64]byte
	var n int64
	for _, id := range ids {
		e := r.mem.get(id)
		h := binary.AppendUvarint(hdr[:0], uint64(id))
		h = binary.AppendUvarint(h, uint64(len(e.row)))
		h = binary.AppendUvarint(h, uint64(len(e.log)))
		for _, b := range [][]byte{h, e.row, e.log} {
			if _, err := w.Write(b); err != nil {
				return fmt.Errorf("output: spill: %w", err)
			}
			n += int64(len(b))
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("output: spill: %w", err)
	}
	rn := &run{r: bufio.NewReaderSize(io.NewSectionReader(r.spill, r.spillOff, n), runBuf)}
	r.spillOff += n
	r.spilled++
	r.mem.reset() // the ring and map go with their entries
	r.memBytes = 0
	ok, err := rn.read()
	if err != nil {
		return err
	}
	if ok {
		r.runs.Push(rn)
	}
	return r.drain()
}

// close removes the spill file.
func (r *reorder) close() error {
	if r.spill == nil {
		return nil
	}
	name := r.spill.Name()
	err := r.spill.Close()
	r.spill = nil
	return errors.Join(err, os.Remove(name))
}

// run is a sorted run of the spill file being read back; its head entry
// is id, row, log.
type run struct {
	r        *bufio.Reader
	id       int64
	row, log []byte
}

// read reads the run's next entry into its head; false at its end.
func (rn *run) read() (bool, error) {
	id, err := binary.ReadUvarint(rn.r)
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("output: spill read: %w", err)
	}
	nr, err := binary.ReadUvarint(rn.r)
	if err != nil {
		return false, fmt.Errorf("output: spill read: %w", err)
	}
	nl, err := binary.ReadUvarint(rn.r)
	if err != nil {
		return false, fmt.Errorf("output: spill read: %w", err)
	}
	b := make([]byte, nr+nl)
	if _, err := io.ReadFull(rn.r, b); err != nil {
		return false, fmt.Errorf("output: spill read: %w", err)
	}
	rn.id, rn.row, rn.log = int64(id), b[:nr], b[nr:]
	return true, nil
}

// lessRun orders runs by their head's id.
func lessRun(a, b **run) bool { return (*a).id < (*b).id }

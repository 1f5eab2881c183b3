package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/pdemu/pdemu/actors"
)

// plainInterval is how often progress is printed as plain lines when
// stderr is not a terminal.
var plainInterval = 10 * time.Second

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progress shows a run's or a comparison's progress on stderr: a bar on a
// terminal, a plain line every plainInterval otherwise, nothing when
// quiet. The actors' callbacks only store counters (atomics); a ticker
// goroutine renders them.
type progress struct {
	w     io.Writer
	total int64 // requests (run) or runs (compare); <= 0 unknown
	unit  string
	start time.Time

	done     atomic.Int64 // requests ended (run) or runs done (compare)
	emulated atomic.Int64 // ns, run only
	mu       sync.Mutex
	perRun   map[string]*atomic.Int64 // compare: requests ended per run

	bar  *progressbar.ProgressBar
	stop chan struct{}
	wg   sync.WaitGroup
}

// newProgress starts reporting; nil when quiet (every method is nil-safe).
func newProgress(w io.Writer, quiet bool, total int, unit string) *progress {
	if quiet {
		return nil
	}
	p := &progress{w: w, total: int64(total), unit: unit, start: time.Now(), stop: make(chan struct{}), perRun: map[string]*atomic.Int64{}}
	interval := plainInterval
	if isTerminal(w) {
		max := int64(-1)
		if total > 0 {
			max = int64(total)
		}
		p.bar = progressbar.NewOptions64(max,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(unit),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionFullWidth(),
		)
		interval = 200 * time.Millisecond
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.render()
			}
		}
	}()
	return p
}

// onRequest is the actors.Options.Progress callback of a single run.
func (p *progress) onRequest(pr actors.Progress) {
	p.done.Store(int64(pr.Ended))
	p.emulated.Store(int64(pr.Emulated))
}

// onRunRequest is the per-run request callback of a comparison.
func (p *progress) onRunRequest(name string, pr actors.Progress) {
	p.mu.Lock()
	c := p.perRun[name]
	if c == nil {
		c = new(atomic.Int64)
		p.perRun[name] = c
	}
	p.mu.Unlock()
	c.Store(int64(pr.Ended))
}

// onRunDone is compare's RunDone callback.
func (p *progress) onRunDone(done, total int, name string, err error) {
	p.done.Store(int64(done))
	status := "done"
	if err != nil {
		status = "FAILED"
	}
	if p.bar == nil {
		fmt.Fprintf(p.w, "pdemu: run %d/%d %s: %s (%s elapsed)\n", done, total, status, name, time.Since(p.start).Round(time.Second))
	}
}

func (p *progress) requestsAcrossRuns() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	for _, c := range p.perRun {
		n += c.Load()
	}
	return n
}

func (p *progress) eta(done int64) string {
	if p.total <= 0 || done <= 0 || done >= p.total {
		return ""
	}
	el := time.Since(p.start)
	left := time.Duration(float64(el) * float64(p.total-done) / float64(done))
	return ", ETA " + left.Round(time.Second).String()
}

func (p *progress) render() {
	done := p.done.Load()
	var desc string
	if p.unit == "runs" {
		desc = fmt.Sprintf("runs (%d requests)", p.requestsAcrossRuns())
	} else {
		desc = fmt.Sprintf("requests, emulated %.1f s", time.Duration(p.emulated.Load()).Seconds())
	}
	if p.bar != nil {
		p.bar.Describe(desc)
		_ = p.bar.Set64(done)
		return
	}
	if p.unit == "runs" {
		return // compare prints a line per finished run
	}
	tot := ""
	if p.total > 0 {
		tot = fmt.Sprintf("/%d", p.total)
	}
	fmt.Fprintf(p.w, "pdemu: %d%s %s, %s elapsed%s\n", done, tot, desc, time.Since(p.start).Round(time.Second), p.eta(done))
}

// finish stops the reporting and clears the bar.
func (p *progress) finish() {
	if p == nil {
		return
	}
	close(p.stop)
	p.wg.Wait()
	if p.bar != nil {
		_ = p.bar.Finish()
		_ = p.bar.Clear()
	}
}

// requestCallback returns the run's progress callback (nil when quiet).
func (p *progress) requestCallback() func(actors.Progress) {
	if p == nil {
		return nil
	}
	return p.onRequest
}

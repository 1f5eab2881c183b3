package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/pdemu/pdemu/report"
)

// cancellable is set once a command enters a phase that stops on its
// context (a run, a compare, an experiment, a server, a fetch) and then
// writes its outputs marked partial. Before that (parsing, chaos drawing,
// loading and checking a trace, building) a signal is obeyed by the
// watchdog: nothing has been written yet.
var cancellable atomic.Bool

// signalGrace is how long the watchdog lets a phase that does not watch
// the context run on after the first signal.
const signalGrace = time.Second

// enterCancellable marks the start of a phase that obeys the context.
func enterCancellable() { cancellable.Store(true) }

// watchdog ends the process signalGrace after the first signal s unless
// the command is in a cancellable phase (which then stops by itself and
// marks its outputs partial): the first SIGINT or SIGTERM ends any phase
// within a second.
func watchdog(s os.Signal) {
	time.Sleep(signalGrace)
	if cancellable.Load() {
		return
	}
	fmt.Fprintf(os.Stderr, "pdemu: stopped by %v before the run started (parsing, drawing chaos, checking the workload or building); no outputs written\n", s)
	os.Exit(signalCode(s))
}

// completeRunIn reports whether dir holds a complete, successful run's
// summary.json (not partial, no error, within --max-failed's default):
// --force replacing it with an unsuccessful run says so.
func completeRunIn(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return false
	}
	var s report.Summary
	if json.Unmarshal(b, &s) != nil {
		return false
	}
	return report.StatusOf(s).OK()
}

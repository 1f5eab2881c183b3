package serve

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/workload"
)

// A run that takes and ends a request before Submit returned (a fast
// emulation, as the soak's time scale 1000 makes it) races nothing: the
// context watch is set before the request can be taken (found by the soak
// under -race: Ended read stopWatch while Submit wrote it). Run with
// -race (CI's go test -race -short does).
func TestBridgeEndedBeforeSubmitReturns(t *testing.T) {
	br := NewBridge(BridgeOptions{TimeScale: 1})
	const n = 300
	var wg sync.WaitGroup
	wg.Go(func() {
		// The run, polling (no notify: nothing orders it after Submit).
		for ended := 0; ended < n; {
			r, ok, _ := br.Take()
			if !ok {
				continue
			}
			br.FirstToken(r.ID, "d0", 0, time.Millisecond, time.Millisecond)
			br.Ended(End{ID: r.ID, Worker: "d0", Mode: "Seed", Arrival: 0, FirstToken: time.Millisecond, Done: 2 * time.Millisecond, Now: 2 * time.Millisecond})
			ended++
		}
	})
	for i := range n {
		ctx, cancel := context.WithCancel(context.Background())
		ev, err := br.Submit(ctx, &workload.Request{InputLen: 10, OutputLen: 2})
		require.NoError(t, err)
		var last Event
		for e := range ev {
			last = e
		}
		assert.Equal(t, EvDone, last.Kind, "request %d", i)
		cancel() // after the end: the watch was stopped, nothing is aborted
	}
	wg.Wait()
	br.Wait()
}

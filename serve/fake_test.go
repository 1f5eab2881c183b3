package serve

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pdemu/pdemu/workload"
)

// fakeCluster is a deterministic stand-in for the emulated cluster (tests
// only): session s lives on worker s mod workers; a request whose session
// is resident there with a prompt that extends the resident one is Direct
// and its matching blocks count as cached; otherwise it is Seed (turn 0)
// or Reseed. Emulated times: TTFT = 1 ms + 10 µs per uncached token, one
// token per 20 ms after that. tokenDelay, when set, is slept between
// tokens on the wall clock (to let tests interfere mid-stream).
type fakeCluster struct {
	workers    int
	tokenDelay time.Duration
	gate       chan struct{} // when set, each request waits for it before its first token
	// faultAfter, when positive, makes every request fail after
	// faultAfter−1 tokens, hit by a fault (a crash the retries did not save).
	faultAfter int

	mu       sync.Mutex
	resident map[int32][]uint64
	closed   bool

	submitted atomic.Int64
	ended     atomic.Int64
	running   atomic.Int64
	ids       sync.Map // request ID → struct{}: IDs must be unique
	dupIDs    atomic.Int64
	wg        sync.WaitGroup
}

func newFake(workers int) *fakeCluster {
	return &fakeCluster{workers: workers, resident: map[int32][]uint64{}}
}

func (f *fakeCluster) Submit(ctx context.Context, r *workload.Request) (<-chan Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, errors.New("closed")
	}
	if _, dup := f.ids.LoadOrStore(r.ID, struct{}{}); dup {
		f.dupIDs.Add(1)
	}
	f.submitted.Add(1)
	worker := fmt.Sprintf("d%d", int(r.Session)%f.workers)
	mode, cached := "Seed", 0
	if r.Turn > 0 {
		mode = "Reseed"
	}
	if prev, ok := f.resident[r.Session]; ok && r.Turn > 0 {
		common := 0
		for common < len(prev) && common < len(r.Blocks) && prev[common] == r.Blocks[common] {
			common++
		}
		if common == len(prev) {
			mode, cached = "Direct", min(common*r.BlockTokens, r.InputLen-1)
		}
	}
	f.resident[r.Session] = r.Blocks
	ch := make(chan Event, r.OutputLen+1)
	ttft := time.Millisecond + time.Duration(r.InputLen-cached)*10*time.Microsecond
	f.running.Add(1)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer close(ch)
		if f.gate != nil {
			<-f.gate
		}
		for i := range r.OutputLen {
			if f.faultAfter > 0 && i == f.faultAfter-1 {
				f.running.Add(-1)
				f.ended.Add(1)
				ch <- Event{Kind: EvFailed, Since: time.Millisecond, Worker: worker, Reason: "attempts: crash d0; last: crash d1", Fault: true}
				return
			}
			if i > 0 && f.tokenDelay > 0 {
				time.Sleep(f.tokenDelay)
			}
			since := ttft + time.Duration(i)*20*time.Millisecond
			ch <- Event{Kind: EvToken, Index: i, Since: since, Emulated: since, Wall: time.Now(), Worker: worker}
		}
		since := ttft + time.Duration(r.OutputLen-1)*20*time.Millisecond
		f.running.Add(-1)
		f.ended.Add(1)
		ch <- Event{Kind: EvDone, Since: since, Emulated: since, Wall: time.Now(), Worker: worker, Mode: mode, CachedTokens: cached}
	}()
	return ch, nil
}

func (f *fakeCluster) Snapshot() Snapshot {
	s := Snapshot{Emulated: time.Second, Router: RouterState{Migrations: 3, Fallbacks: 2}}
	for i := range f.workers {
		s.Workers = append(s.Workers, WorkerState{Name: fmt.Sprintf("d%d", i), Role: "decode", Running: int(f.running.Load()), KVUsed: 100, KVCap: 1000})
	}
	s.Links = []LinkState{{Name: "p0->d0", Bytes: 12345, Utilisation: 0.25}}
	return s
}

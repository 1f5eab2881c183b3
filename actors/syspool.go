package actors

import (
	"io"
	"log"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
)

// Creating a protoactor ActorSystem costs ~3 ms and ~70k allocations (its
// process registry pre-allocates 1024 concurrent maps), more than a whole
// default-scenario replay's own work. Runs therefore borrow systems from a
// pool: a run has its system to itself, stops every actor it spawned before
// giving it back, and points the system's log bridge at its own logger.
//
// A sync.Pool alone is emptied by every second garbage collection, and a
// benchmark or an experiment running many short runs collects often: the
// profile of BenchmarkReplay showed a system re-created every ~8 runs,
// ~9k of its ~21k allocations per run. The pool therefore keeps up to
// keepSystems idle systems on a plain list the collector does not empty
// (a system's idle footprint is its registry's maps, a few MB); more idle
// systems than that (many concurrent runs) overflow to the sync.Pool.
type pooledSystem struct {
	sys *actor.ActorSystem
	log atomic.Pointer[hclog.Logger] // the borrowing run's logger
	// parked are spawned actors no run occupies, for the wall clock [0]
	// and the virtual clock [1] (slots.go); only the borrower touches them.
	parked [2][]*slot
	// queue is the empty queue of the last virtual run on this system,
	// whose buffers the next one reuses (VirtualClock.adopt).
	queue vqueue
}

var (
	systems sync.Pool // overflow of kept
	keptMu  sync.Mutex
	kept    []*pooledSystem // idle systems, at most keepSystems
)

// keepSystems bounds the idle systems kept from the garbage collector: one
// per concurrent run on this machine's processors.
var keepSystems = max(2, runtime.GOMAXPROCS(0))

// borrowSystem returns an idle actor system whose protoactor logs go to log.
func borrowSystem(log hclog.Logger, fresh bool) *pooledSystem {
	named := log.Named("protoactor")
	var ps *pooledSystem
	if !fresh {
		keptMu.Lock()
		if n := len(kept); n > 0 {
			ps, kept[n-1] = kept[n-1], nil
			kept = kept[:n-1]
		}
		keptMu.Unlock()
		if ps == nil {
			ps, _ = systems.Get().(*pooledSystem)
		}
	}
	if ps == nil {
		ps = &pooledSystem{}
		ps.log.Store(&named) // NewActorSystem logs while it starts
		ps.sys = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
			return slog.New(&hclogHandler{l: swappable{ps}})
		}))
	}
	ps.log.Store(&named)
	return ps
}

// release gives a system whose actors were all stopped back to the pool.
func (ps *pooledSystem) release() {
	keptMu.Lock()
	if len(kept) < keepSystems {
		kept = append(kept, ps)
		keptMu.Unlock()
		return
	}
	keptMu.Unlock()
	systems.Put(ps)
}

// swappable is an hclog.Logger that forwards to the pooled system's
// current borrower.
type swappable struct{ ps *pooledSystem }

func (s swappable) cur() hclog.Logger { return *s.ps.log.Load() }

func (s swappable) Log(level hclog.Level, msg string, args ...interface{}) {
	s.cur().Log(level, msg, args...)
}
func (s swappable) Trace(msg string, args ...interface{}) { s.cur().Trace(msg, args...) }
func (s swappable) Debug(msg string, args ...interface{}) { s.cur().Debug(msg, args...) }
func (s swappable) Info(msg string, args ...interface{})  { s.cur().Info(msg, args...) }
func (s swappable) Warn(msg string, args ...interface{})  { s.cur().Warn(msg, args...) }
func (s swappable) Error(msg string, args ...interface{}) { s.cur().Error(msg, args...) }
func (s swappable) IsTrace() bool                         { return s.cur().IsTrace() }
func (s swappable) IsDebug() bool                         { return s.cur().IsDebug() }
func (s swappable) IsInfo() bool                          { return s.cur().IsInfo() }
func (s swappable) IsWarn() bool                          { return s.cur().IsWarn() }
func (s swappable) IsError() bool                         { return s.cur().IsError() }
func (s swappable) ImpliedArgs() []interface{}            { return s.cur().ImpliedArgs() }
func (s swappable) With(args ...interface{}) hclog.Logger { return s.cur().With(args...) }
func (s swappable) Name() string                          { return s.cur().Name() }
func (s swappable) Named(name string) hclog.Logger        { return s.cur().Named(name) }
func (s swappable) ResetNamed(name string) hclog.Logger   { return s.cur().ResetNamed(name) }
func (s swappable) SetLevel(level hclog.Level)            { s.cur().SetLevel(level) }
func (s swappable) GetLevel() hclog.Level                 { return s.cur().GetLevel() }
func (s swappable) StandardLogger(o *hclog.StandardLoggerOptions) *log.Logger {
	return s.cur().StandardLogger(o)
}
func (s swappable) StandardWriter(o *hclog.StandardLoggerOptions) io.Writer {
	return s.cur().StandardWriter(o)
}

package actors

import (
	"fmt"
	"math"

	"github.com/asynkron/protoactor-go/actor"
)

// Supervision of injected crashes (issue 13). A crash from the fault
// schedule is an actor failure: the cluster tier has already dropped the
// node's state (cluster/decode.go, prefill.go: a fresh worker, its requests handed
// back to the router), then the shell panics with injectedCrash and the
// guardian's strategy restarts the actor. The node stays down (it answers
// nothing but bounces) until its Restart message at restart_after: the
// supervisor's restart is immediate in real time, the downtime is
// emulated. Any other panic is a bug: the shell reports it as the run's
// failure (before it reaches the supervisor), and the strategy stops such
// an actor rather than restarting it.

// injectedCrash is the panic value of an injected crash.
type injectedCrash struct {
	fault int
	actor string
}

func (c injectedCrash) String() string {
	return fmt.Sprintf("injected crash %d of %s", c.fault, c.actor)
}

// supervision restarts an actor that failed with an injected crash, as
// often as the schedule says, and stops one that failed otherwise.
var supervision = actor.NewOneForOneStrategy(math.MaxInt32, 0, func(reason any) actor.Directive {
	if _, ok := reason.(injectedCrash); ok {
		return actor.RestartDirective
	}
	return actor.StopDirective
})

// restartCounts returns the restarts of every actor that was restarted,
// by actor name (nil when none was).
func restartCounts(shells []*shell) map[string]int {
	var out map[string]int
	for _, s := range shells {
		if s.restarts > 0 {
			if out == nil {
				out = map[string]int{}
			}
			out[s.name] = s.restarts
		}
	}
	return out
}

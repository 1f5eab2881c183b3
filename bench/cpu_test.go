package bench_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user + system) the process has used so far.
// Benchmarks report it per op beside the wall time: on a machine shared
// with other jobs it moves much less than wall time, which includes
// waiting for a core.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

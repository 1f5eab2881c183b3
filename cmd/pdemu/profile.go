package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
)

// startProfiles starts a CPU profile to cpu and arranges a heap profile to
// mem (either may be empty: no profile). stop ends the CPU profile and
// writes the heap profile; it must be called once, after the run.
func startProfiles(cpu, mem string) (stop func() error, err error) {
	var cf *os.File
	if cpu != "" {
		if cf, err = os.Create(cpu); err != nil {
			return nil, usageErr("--cpuprofile: %v", err)
		}
		if err := pprof.StartCPUProfile(cf); err != nil {
			cf.Close()
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
	}
	var mf *os.File
	if mem != "" {
		if mf, err = os.Create(mem); err != nil {
			if cf != nil {
				pprof.StopCPUProfile()
				cf.Close()
			}
			return nil, usageErr("--memprofile: %v", err)
		}
	}
	return func() error {
		var errs []error
		if cf != nil {
			pprof.StopCPUProfile()
			errs = append(errs, cf.Close())
		}
		if mf != nil {
			runtime.GC() // the live heap at the end, as go test -memprofile does
			if err := pprof.Lookup("allocs").WriteTo(mf, 0); err != nil {
				errs = append(errs, fmt.Errorf("--memprofile: %w", err))
			}
			errs = append(errs, mf.Close())
		}
		return errors.Join(errs...)
	}, nil
}

// heapProfileWanted reports whether this process may write a heap
// profile: --memprofile among args, or a memprofilerate in GODEBUG. main
// turns the runtime's heap-profile sampling off otherwise (MemProfileRate
// 0): unwinding a stack per 512 KiB allocated was 1.4-1.8 % of a Mooncake
// run's CPU (perf, runtime.mProf_Malloc), for a profile nothing reads.
func heapProfileWanted(args []string, godebug string) bool {
	if strings.Contains(godebug, "memprofilerate") {
		return true
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "--memprofile") || strings.HasPrefix(a, "-memprofile") {
			return true
		}
	}
	return false
}

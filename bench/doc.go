// Package bench holds pdemu's benchmarks: the virtual-clock replay of the
// default scenario (end-to-end emulation speed) and the router hot path,
// with SyncKVC, the concurrency-safe KVC front that BenchmarkRouteParallel
// drives (the emulator itself never routes from several goroutines).
// Run them with
//
//	go test ./bench/ -run '^$' -bench . -benchmem -count 6 | tee new.txt
//	benchstat old.txt new.txt
//
// and profile with -cpuprofile / -memprofile.
package bench

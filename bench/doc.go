// Package bench holds pdemu's benchmarks: the virtual-clock replay of the
// default scenario (end-to-end emulation speed) and the router hot path.
// Run them with
//
//	go test ./bench/ -run '^$' -bench . -benchmem -count 6 | tee new.txt
//	benchstat old.txt new.txt
//
// and profile with -cpuprofile / -memprofile.
package bench

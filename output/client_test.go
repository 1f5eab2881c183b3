package output_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/output"
)

// A served run's client columns: a field per metrics.ClientColumns, empty
// when its Has flag is false, signed ms with three decimals otherwise.
func TestClientFields(t *testing.T) {
	for _, tc := range []struct {
		c    *metrics.ClientTimes
		want string
	}{
		{nil, ",,,"},
		{&metrics.ClientTimes{}, ",,,"},
		{&metrics.ClientTimes{TTFT: 1500 * time.Microsecond, E2E: 20 * time.Millisecond, Late: -250 * time.Microsecond,
			HasTTFT: true, HasE2E: true, HasLate: true}, ",1.500,20.000,-0.250"},
		{&metrics.ClientTimes{E2E: 3 * time.Millisecond, HasE2E: true}, ",,3.000,"},
	} {
		assert.Equal(t, tc.want, string(metrics.AppendClientFields(nil, tc.c)))
	}
	assert.Equal(t, ",client_ttft_ms,client_e2e_ms,client_late_ms", string(metrics.AppendClientHeader(nil)))
}

// BenchmarkStreamRecordClient: a served run's row (the run's columns and
// the client ones) through a Stream, in id order, against a run's row
// (ns/row, allocations per row: none expected either way).
func BenchmarkStreamRecordClient(b *testing.B) {
	for _, client := range []bool{false, true} {
		b.Run(map[bool]string{false: "run", true: "served"}[client], func(b *testing.B) {
			st, err := output.NewStream(b.TempDir(), output.StreamOptions{Client: client})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			r := metrics.Record{Session: "s-1", Turn: 3, Arrival: 123456789, TTFT: 45678901, E2E: 2345678901, Mode: "Direct", D: "d1",
				InputTokens: 4321, OutputTokens: 256, CachedTokens: 4000, Tries: 1, TPOT: 4500000, State: metrics.StateCompleted}
			c := metrics.ClientTimes{TTFT: 46 * time.Millisecond, E2E: 2350 * time.Millisecond, Late: 321 * time.Microsecond, HasTTFT: true, HasE2E: true, HasLate: true}
			b.ReportAllocs()
			for b.Loop() {
				if client {
					err = st.RecordClient(r, c)
				} else {
					err = st.Record(r)
				}
				if err != nil {
					b.Fatal(err)
				}
				r.ID++
			}
		})
	}
}

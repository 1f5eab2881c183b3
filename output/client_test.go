package output_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/pdemu/pdemu/metrics"
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

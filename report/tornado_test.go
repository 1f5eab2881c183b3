package report

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTornado(t *testing.T) {
	svg, err := Tornado("TTFT p99", "s", 1.2, []TornadoBar{{"mfu", 1.5, 1.0}, {"tcp_rate", 2.0, 0.9}, {"gone", math.NaN(), 1}})
	require.NoError(t, err)
	s := string(svg)
	require.True(t, strings.HasPrefix(strings.TrimSpace(s), "<?xml") || strings.Contains(s, "<svg"))
	require.Contains(t, s, "tcp_rate")
	require.NotContains(t, s, "gone")
	_, err = Tornado("empty", "s", 1, nil)
	require.Error(t, err)
}

package topology

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSLOBlockAndFlag(t *testing.T) {
	s, err := parseEmbedded("1p3d-mlx5.hcl", Options{})
	require.NoError(t, err)
	assert.Equal(t, DefaultSLO(), s.SLO, "no slo block: the defaults")

	src := []byte("extends = \"<embedded>/1p3d-mlx5.hcl\"\nslo {\n  ttft = \"2s\"\n  e2e = \"1m\"\n  attainment = 0.99\n}\n")
	s, err = Parse("/x/my.hcl", src, Options{Set: []string{"slo.tpot=50ms"}})
	require.NoError(t, err)
	assert.Equal(t, SLO{TTFT: 2 * time.Second, TPOT: 50 * time.Millisecond, E2E: time.Minute, Attainment: 0.99}, s.SLO)

	_, err = Parse("/x/my.hcl", []byte("extends = \"<embedded>/1p3d-mlx5.hcl\"\nslo {\n  attainment = 1.5\n}\n"), Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"attainment"`)

	got, err := ParseSLO(DefaultSLO(), "ttft=500ms,tpot=0,attainment=0.95")
	require.NoError(t, err)
	assert.Equal(t, SLO{TTFT: 500 * time.Millisecond, Attainment: 0.95}, got)
	_, err = ParseSLO(DefaultSLO(), "ttf=1s")
	assert.ErrorContains(t, err, `Did you mean "ttft"?`)
	_, err = ParseSLO(DefaultSLO(), "ttft=soon")
	assert.ErrorContains(t, err, "want a duration")
	assert.Equal(t, "ttft=10s,tpot=100ms,e2e=0,attainment=0.9", DefaultSLO().String())
}

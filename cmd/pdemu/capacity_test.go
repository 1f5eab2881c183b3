package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCapacityGridAndBounds(t *testing.T) {
	sessions, _ := axisByName("sessions")
	none := func(float64) bool { return false }
	assert.Equal(t, []float64{4, 8, 16, 32, 64}, grid(sessions, 4, 64, 5, true, none))
	assert.Equal(t, []float64{27, 29, 31}, grid(sessions, 27, 31, 3, false, none))
	assert.Equal(t, []float64{29}, grid(sessions, 27, 31, 3, false, func(v float64) bool { return v != 29 }), "loads already run are skipped")

	g := &capGroup{points: []capPoint{{Load: 32, Met: false}, {Load: 8, Met: true}, {Load: 16, Met: true}, {Load: 64, Met: false}}}
	pass, fail := g.bounds()
	assert.Equal(t, 16.0, pass)
	assert.Equal(t, 32.0, fail)
	g = &capGroup{points: []capPoint{{Load: 8, Met: true}, {Load: 4, Met: false}, {Load: 2, Met: true}}}
	pass, fail = g.bounds()
	assert.Equal(t, 2.0, pass, "a load met above the first miss does not count")
	assert.Equal(t, 4.0, fail)
	g = &capGroup{points: []capPoint{{Load: 8, Met: false}}}
	pass, fail = g.bounds()
	assert.True(t, math.IsNaN(pass))
	assert.Equal(t, 8.0, fail)
}

// pdemu capacity on the default scenario returns a load and a plot.
func TestCapacityOnTheDefaultScenario(t *testing.T) {
	out := t.TempDir()
	stdout, _, err := runCLI(t, "capacity", "1p3d-mlx5", "--router", "kvc,vanilla", "--min", "2", "--max", "48", "--steps", "4", "--rounds", "2",
		"--slo", "ttft=1s", "--out", out, "--jobs", "2")
	require.NoError(t, err)
	assert.Contains(t, stdout, "capacity (sessions)")
	assert.Contains(t, stdout, "1p3d-mlx5  kvc")
	assert.Contains(t, stdout, "1p3d-mlx5  vanilla")
	b, err := os.ReadFile(filepath.Join(out, "capacity.json"))
	require.NoError(t, err)
	var doc struct {
		Load   string     `json:"load"`
		SLO    string     `json:"slo"`
		Points []capPoint `json:"points"`
	}
	require.NoError(t, json.Unmarshal(b, &doc))
	assert.Equal(t, "sessions", doc.Load)
	assert.Equal(t, "ttft=1s,tpot=100ms,e2e=0,attainment=0.9", doc.SLO)
	met, missed := 0, 0
	for _, p := range doc.Points {
		if p.Met {
			met++
		} else {
			missed++
		}
		_, err := os.Stat(filepath.Join(out, p.Run, "summary.json"))
		assert.NoError(t, err, "each point is a run directory")
	}
	assert.Positive(t, met, "some load meets a 1 s TTFT")
	assert.Positive(t, missed, "and 48 sessions on 1P3D do not")
	svg, err := os.ReadFile(filepath.Join(out, "capacity.svg"))
	require.NoError(t, err)
	assert.Contains(t, string(svg), "<svg")
}

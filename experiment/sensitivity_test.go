package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSensitivityDefs: two ends (three with an unfitted value) × four runs
// for every varied parameter, each a run of a parameter set to that end.
func TestSensitivityDefs(t *testing.T) {
	n, u := 0, 0
	for _, p := range Params() {
		if p.Varied() {
			n++
			require.True(t, p.Label == LabelFitted || p.Label == LabelAssumed, p.Name)
			if p.HasUnfitted {
				u++
				require.Equal(t, LabelFitted, p.Label, p.Name)
			}
		}
	}
	defs := sensitivityDefs(1, true, false)
	require.Len(t, sensitivityDefs(1, true, true), 4*u, "without --sensitivity: the unfitted values only")
	require.Len(t, defs, 8*n+4*u, "low and high, and unfitted where there is one, × 4 runs")
	require.Equal(t, "", defs[indexOf(defs, sensName("tcp_rate", "unfitted", "v2-tcp"))].vars["tcp_rate"], "no rate cap")
	names := map[string]bool{}
	for _, d := range defs {
		require.False(t, names[d.name], d.name)
		names[d.name] = true
	}
	require.True(t, names[sensName("mfu", "low", "dp4")])
	require.Equal(t, "0.25", defs[indexOf(defs, sensName("mfu", "low", "v2-tcp"))].vars["mfu"])
}

func indexOf(defs []runDef, name string) int {
	for i, d := range defs {
		if d.name == name {
			return i
		}
	}
	return -1
}

// TestSensitivityDecides: with every variant equal to the base runs no
// parameter decides anything; a variant whose figure leaves its tolerance
// decides it, a fitted one re-classes it depends-on-fitted, and the HTML
// report draws a tornado plot per figure.
func TestSensitivityDecides(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end experiment")
	}
	rep, err := Run(context.Background(), "kvc-paper", Options{Short: true, Parallel: 2})
	require.NoError(t, err)
	base := &seedRuns{rep.outs["v2-tcp-s1"], rep.outs["v2-rdma-s1"], rep.outs["v1-tcp-s1"], rep.outs["dp4-s1"]}
	by := map[string]*runOut{}
	for _, p := range Params() {
		for _, end := range []string{"low", "high", "unfitted"} {
			by[sensName(p.Name, end, "v2-tcp")], by[sensName(p.Name, end, "v2-rdma")] = base.kvc, base.kvcR
			by[sensName(p.Name, end, "v1-tcp")], by[sensName(p.Name, end, "dp4")] = base.v1, base.dp
		}
	}
	s := sensitivity(1, base, by)
	for _, f := range s.Figures {
		assert.Empty(t, f.DecidedBy, f.Figure)
	}
	by[sensName("tcp_rate", "high", "v2-tcp")] = base.v1 // the v1 run's Direct share is out of v2's tolerance
	rep.Sensitivity = sensitivity(1, base, by)
	rep.applySensitivity(rep.Sensitivity)
	f := rep.Figure("Direct share, KVC v2 1P3D")
	require.NotNil(t, f)
	if rep.Sensitivity.Figures[0].BaseOK {
		require.Len(t, rep.Sensitivity.Deciders, 1)
		d := rep.Sensitivity.Deciders[0]
		assert.Equal(t, "tcp_rate", d.Param)
		assert.Equal(t, LabelFitted, d.Label)
		assert.GreaterOrEqual(t, d.Figures, 1, "the Direct share and every figure computed from the swapped run")
	}
	if f.InTolerance {
		assert.Equal(t, []string{"tcp_rate"}, f.DecidedBy)
		assert.Equal(t, VerdictDependsFitted, f.Verdict, "tcp_rate is fitted")
	}
	var b bytes.Buffer
	require.NoError(t, rep.WriteHTML(&b))
	assert.Contains(t, b.String(), "<svg")
	assert.Contains(t, b.String(), "Sensitivity (seed 1)")
}

// TestJSONNaN: a figure or sensitivity end with nothing to measure (NaN)
// is null in report.json, not an encoding error.
func TestJSONNaN(t *testing.T) {
	rep := &Report{Figures: []Figure{{Name: "x", Value: math.NaN()}},
		Sensitivity: &Sensitivity{Figures: []FigureSensitivity{{Figure: "x", Base: math.NaN(),
			Moves: []Move{{Param: "p", Low: math.NaN(), High: 1, Unfitted: math.NaN()}}}}}}
	var b bytes.Buffer
	require.NoError(t, rep.WriteJSON(&b))
	assert.Contains(t, b.String(), `"value": null`)
	assert.Contains(t, b.String(), `"base": null`)
	assert.Contains(t, b.String(), `"at_low": null`)
	assert.NotContains(t, b.String(), "at_unfitted")
	var back Report
	require.NoError(t, json.Unmarshal(b.Bytes(), &back))
	assert.True(t, math.IsNaN(back.Figures[0].Value))
}

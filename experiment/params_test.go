package experiment

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var updateModel = flag.Bool("update-model", false, "rewrite docs/MODEL.md's parameter table from Params()")

const (
	tableBegin = "<!-- params:begin (experiment.Params; go test ./experiment -run TestModelParamTable -update-model) -->"
	tableEnd   = "<!-- params:end -->"
)

// paramTable renders Params() as docs/MODEL.md's parameter table.
func paramTable() string {
	var b strings.Builder
	b.WriteString("| parameter | unit | default | label | sensitivity low – high | unfitted | source |\n|---|---|---|---|---|---|---|\n")
	for _, p := range Params() {
		rng, unf := "—", "—"
		if p.Varied() {
			rng = fmt.Sprintf("%s – %s", num(p.Low), num(p.High))
		}
		if p.HasUnfitted {
			unf = num(p.Unfitted)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | *%s* | %s | %s | %s |\n", p.Name, p.Unit, num(p.Default), p.Label, rng, unf, p.Source)
	}
	return b.String()
}

func num(x float64) string { return strconv.FormatFloat(x, 'g', 10, 64) }

// TestModelParamTable: docs/MODEL.md's parameter table is Params() (name,
// unit, default, label, range, source), and every default is the value the
// code uses.
func TestModelParamTable(t *testing.T) {
	for _, p := range Params() {
		require.Equal(t, p.code(), p.Default, "%s: the table's default is not the code's", p.Name)
		require.Contains(t, []string{LabelPublished, LabelFitted, LabelAssumed}, p.Label, p.Name)
		if p.Label != LabelPublished && p.Low != p.High {
			require.Less(t, p.Low, p.High, p.Name)
		}
	}
	path := filepath.Join("..", "docs", "MODEL.md")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	doc := string(b)
	i, j := strings.Index(doc, tableBegin), strings.Index(doc, tableEnd)
	require.True(t, i >= 0 && j > i, "docs/MODEL.md has no parameter table markers")
	want := paramTable()
	got := doc[i+len(tableBegin)+1 : j]
	if *updateModel {
		require.NoError(t, os.WriteFile(path, []byte(doc[:i+len(tableBegin)+1]+want+doc[j:]), 0o644))
		return
	}
	require.Equal(t, want, got, "docs/MODEL.md's parameter table is stale: go test ./experiment -run TestModelParamTable -update-model")
	// The table's rows parse back to the registry's values.
	row := regexp.MustCompile("^\\| `([^`]+)` \\| [^|]+ \\| ([^ ]+) \\| \\*([a-z]+)\\* \\|")
	n := 0
	for _, line := range strings.Split(got, "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n++
		v, err := strconv.ParseFloat(m[2], 64)
		require.NoError(t, err, line)
		found := false
		for _, p := range Params() {
			if p.Name == m[1] {
				found = true
				require.InDelta(t, p.code(), v, 1e-9*max(1, v), m[1])
				require.Equal(t, p.Label, m[3], m[1])
			}
		}
		require.True(t, found, m[1])
	}
	require.Equal(t, len(Params()), n)
}

// TestMFULabel: MFU 0.35 is labelled assumed wherever it is described; no
// line calls it fitted (or "plausible" without "assumed").
func TestMFULabel(t *testing.T) {
	files := []string{"../docs/MODEL.md", "../gpu/perf.go", "kvcpaper/base/paper.hcl", "kvcpaper.go"}
	more, _ := filepath.Glob("../scenarios/*.hcl")
	files = append(files, more...)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for i, line := range strings.Split(string(b), "\n") {
			l := strings.ToLower(line)
			if !strings.Contains(l, "0.35") || !strings.Contains(l, "mfu") {
				continue
			}
			if strings.Contains(l, "fitted") && !strings.Contains(l, "not fitted") && !strings.Contains(l, "no fit") {
				t.Errorf("%s:%d calls MFU 0.35 fitted: %s", f, i+1, line)
			}
			if strings.Contains(l, "plausible") && !strings.Contains(l, "assumed") {
				t.Errorf("%s:%d calls MFU 0.35 plausible without labelling it assumed: %s", f, i+1, line)
			}
		}
	}
}

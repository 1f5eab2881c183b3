package experiment

import "testing"

// TestMissParts: a ratio whose parts both miss is a miss even when its own
// value is within tolerance (the two misses cancel), and names the parts.
func TestMissParts(t *testing.T) {
	var fs []Figure
	for _, d := range figDefs() {
		fs = append(fs, Figure{Name: d.name, Verdict: VerdictReproduced, InTolerance: true})
	}
	at := func(name string) *Figure {
		for i := range fs {
			if fs[i].Name == name {
				return &fs[i]
			}
		}
		t.Fatalf("no row %q", name)
		return nil
	}
	at("TTFT p99, KVC TCP").Verdict = VerdictMiss
	at("TTFT p99, 4-way DP").Verdict = VerdictMiss
	missParts(fs)
	r := at("TTFT p99, KVC / 4-way DP (TCP)")
	if r.Verdict != VerdictMiss || len(r.PartsMissed) != 2 {
		t.Fatalf("ratio of two misses: %+v", *r)
	}
	if v := at("Prefilled tokens, KVC / DP").Verdict; v != VerdictReproduced {
		t.Fatalf("a ratio whose parts are in tolerance stays %s, got %s", VerdictReproduced, v)
	}
}

package experiment

import (
	"fmt"
	"math"
)

// Verdict classes of a Figure (issue 19).
const (
	// VerdictReproduced: within the stated tolerance (relative for shares
	// below 20 %), and no fitted parameter was fitted to it or moves it
	// out of tolerance within its sensitivity range.
	VerdictReproduced = "reproduced"
	// VerdictDependsFitted: within tolerance, but a fitted parameter was
	// fitted to this figure (DependsOn), or moving a fitted parameter to
	// the low or high end of its documented range takes it out of
	// tolerance (found by --sensitivity): no evidence either way.
	VerdictDependsFitted = "depends-on-fitted"
	// VerdictConsistency: arithmetic or an identity of the model (bytes ÷
	// line rate, a ratio the model holds constant), not evidence.
	VerdictConsistency = "consistency-check"
	// VerdictMiss: outside tolerance; Attribution decomposes it.
	VerdictMiss = "miss"
)

// VerdictClasses lists the verdict classes in report order.
var VerdictClasses = []string{VerdictReproduced, VerdictDependsFitted, VerdictConsistency, VerdictMiss}

// figDef is one published figure: how to compute it from a set of runs
// (one per seed, or the sensitivity variants' single runs) and its test.
type figDef struct {
	name, published, tol string
	format               func(float64) string
	// value computes the figure from the runs of one seed.
	value func(k *seedRuns) float64
	ok    func(float64) bool
	// consistency: arithmetic or identity (VerdictConsistency).
	consistency bool
	// dependsOn: fitted parameters fitted to (or derived from) this figure.
	dependsOn []string
	// attribution: the breakdowns that explain it (attribution.go).
	attribution []string
	// parts: the rows a ratio or difference is made of. When one of them
	// misses, so does the combination, whatever its own value: two
	// misses can cancel in a ratio (KVC's and DP's p99 both 3–4× the
	// paper's give a ratio near the paper's), and that is no evidence.
	parts []string
}

// seedRuns are the runs of one seed the figures read.
type seedRuns struct{ kvc, kvcR, v1, dp *runOut }

func in(lo, hi float64) func(float64) bool { return func(x float64) bool { return x >= lo && x <= hi } }

// withinF is "within a factor f of want (same sign)".
func withinF(want, f float64) func(float64) bool {
	return func(x float64) bool { return within(x, want, f) }
}

// points is "± d share points of want" (shares of 20 % or more).
func points(want, d float64) func(float64) bool {
	return func(x float64) bool { return math.Abs(x-want) <= d }
}

// relShare is the relative tolerance of a share below 20 %: ± rel of want.
func relShare(want, rel float64) func(float64) bool {
	return func(x float64) bool { return math.Abs(x-want) <= rel*want }
}

func med(xs []float64) float64 { return quantile(append([]float64(nil), xs...), 0.5) }

// figDefs are the kvc-paper table's rows.
func figDefs() []figDef {
	direct := func(o *runOut) float64 { return o.st.sum.DirectShare }
	return []figDef{
		{name: "Direct share, KVC v2 1P3D", published: "91.6 %", tol: "± 5 points", format: pts,
			value: func(k *seedRuns) float64 { return direct(k.kvc) }, ok: points(0.916, 0.05),
			attribution: []string{attrPrefilled, attrCauses}},
		{name: "Requests that touch P, KVC v2", published: "≈ 8 % (328 of 4,449)", tol: "± 30 % relative (5.2–9.6 %)", format: pts,
			value: func(k *seedRuns) float64 { return k.kvc.st.sum.PShare }, ok: relShare(0.074, 0.3),
			attribution: []string{attrCauses, attrPrefilled}},
		{name: "TTFT p99, KVC TCP", published: "1.28 s", tol: "within ×1.5 (0.85–1.92 s)", format: secs,
			value: func(k *seedRuns) float64 { return k.kvc.st.sum.TTFTp99 / 1000 }, ok: withinF(1.28, 1.5),
			attribution: []string{attrTail}},
		{name: "TTFT p99, 4-way DP", published: "0.43 s", tol: "within ×1.5 (0.29–0.65 s)", format: secs,
			value: func(k *seedRuns) float64 { return k.dp.st.sum.TTFTp99 / 1000 }, ok: withinF(0.43, 1.5),
			attribution: []string{attrTail}},
		{name: "TTFT p99, KVC / 4-way DP (TCP)", published: "1.28 s / 0.43 s = 2.98×", tol: "> 1 and within ×1.5 (1.99–4.47×)", format: ratio,
			parts: []string{"TTFT p99, KVC TCP", "TTFT p99, 4-way DP"},
			value: func(k *seedRuns) float64 { return k.kvc.st.sum.TTFTp99 / k.dp.st.sum.TTFTp99 }, ok: withinF(2.98, 1.5),
			attribution: []string{attrTail}},
		{name: "TTFT p50 gain, KVC vs DP", published: "−54 %", tol: "negative, within ×1.5 (−36 to −81 %)", format: gain,
			value: func(k *seedRuns) float64 { return k.kvc.st.sum.TTFTp50/k.dp.st.sum.TTFTp50 - 1 }, ok: withinF(-0.54, 1.5),
			attribution: []string{attrUncached, attrPrefilled}},
		{name: "TTFT p90 gain, KVC vs DP", published: "−64 %", tol: "negative, within ×1.5 (−43 to −96 %)", format: gain,
			value: func(k *seedRuns) float64 { return k.kvc.st.sum.TTFTp90/k.dp.st.sum.TTFTp90 - 1 }, ok: withinF(-0.64, 1.5),
			attribution: []string{attrUncached, attrTail}},
		{name: "TTFT mean gain, KVC vs DP (APH)", published: "−24 %", tol: "negative, within ×1.5 (−16 to −36 %)", format: gain,
			value: func(k *seedRuns) float64 { return k.kvc.st.sum.TTFTMean/k.dp.st.sum.TTFTMean - 1 }, ok: withinF(-0.24, 1.5),
			attribution: []string{attrTail, attrPrefilled}},
		{name: "E2E p50 gain, KVC vs DP (APH)", published: "−12.6 %", tol: "negative, within ×1.5 (−8.4 to −18.9 %)", format: gain,
			value: func(k *seedRuns) float64 { return k.kvc.st.sum.E2Ep50/k.dp.st.sum.E2Ep50 - 1 }, ok: withinF(-0.126, 1.5),
			attribution: []string{attrUncached}},
		{name: "Prefilled tokens, KVC / DP", published: "2.46 M / 4.17 M = 0.59×", tol: "< 1 and within ×1.5 (0.39–0.88×)", format: ratio,
			parts: []string{"Prefilled tokens, KVC", "Prefilled tokens, 4-way DP"},
			value: func(k *seedRuns) float64 { return float64(k.kvc.st.sum.Prefilled) / float64(k.dp.st.sum.Prefilled) }, ok: withinF(0.59, 1.5),
			attribution: []string{attrPrefilled, attrCauses}},
		{name: "Prefilled tokens, KVC", published: "2.46 M", tol: "within ×1.5 (1.64–3.69 M)", format: mtok,
			value: func(k *seedRuns) float64 { return float64(k.kvc.st.sum.Prefilled) }, ok: withinF(2.46e6, 1.5),
			attribution: []string{attrPrefilled, attrCauses}},
		{name: "Prefilled tokens, 4-way DP", published: "4.17 M", tol: "within ×1.5 (2.78–6.26 M)", format: mtok,
			value: func(k *seedRuns) float64 { return float64(k.dp.st.sum.Prefilled) }, ok: withinF(4.17e6, 1.5),
			attribution: []string{attrPrefilled}},
		{name: "Median uncached tokens per request, KVC", published: "187", tol: "within ×1.5 (125–281)", format: f0,
			value: func(k *seedRuns) float64 { return k.kvc.st.medianUncached }, ok: withinF(187, 1.5),
			dependsOn: []string{"swebench.append_p50"}, attribution: []string{attrUncached}},
		{name: "Median uncached tokens per request, DP", published: "781", tol: "within ×1.5 (521–1,172)", format: f0,
			value: func(k *seedRuns) float64 { return k.dp.st.medianUncached }, ok: withinF(781, 1.5),
			attribution: []string{attrUncached}},
		{name: "Decode tokens, KVC", published: "≈ 1.00 M (≈ 225 per request)", tol: "within ±10 % (0.90–1.10 M)", format: mtok,
			value: func(k *seedRuns) float64 { return float64(k.kvc.st.sum.Decoded) }, ok: in(0.9e6, 1.1e6),
			dependsOn: []string{"swebench.output_p50"}, attribution: []string{attrDecode}},
		{name: "Reseed TTFT over TCP (median)", published: "3–7 s", tol: "in 3–7 s", format: secs,
			value: func(k *seedRuns) float64 { return med(k.kvc.st.reseedTTFT) }, ok: in(3, 7),
			dependsOn: []string{"tcp_rate"}, attribution: []string{attrReseeds}},
		{name: "Reseed re-prefill over TCP (median)", published: "1.5–3 s", tol: "in 1.5–3 s", format: secs,
			value: func(k *seedRuns) float64 { return med(k.kvc.st.reseedPrefill) }, ok: in(1.5, 3),
			attribution: []string{attrReseeds}},
		{name: "Reseed transfer over TCP (median)", published: "1.5–4 s", tol: "in 1.5–4 s", format: secs,
			value: func(k *seedRuns) float64 { return med(k.kvc.st.reseedXfer) }, ok: in(1.5, 4),
			dependsOn: []string{"tcp_rate"}, attribution: []string{attrReseeds}},
		{name: "Reseed transfer over RDMA (median)", published: "≈ 200 ms", tol: "0.1–0.4 s", format: secs,
			value: func(k *seedRuns) float64 { return med(k.kvcR.st.reseedXfer) }, ok: in(0.1, 0.4), consistency: true},
		{name: "Re-prefill RDMA / TCP", published: "unchanged (1×)", tol: "0.67–1.5×", format: ratio,
			value: func(k *seedRuns) float64 { return med(k.kvcR.st.reseedPrefill) / med(k.kvc.st.reseedPrefill) }, ok: in(0.67, 1.5), consistency: true},
		{name: "TTFT p99, KVC over RDMA", published: "≈ 0.7 s (projected)", tol: "within ×1.5 (0.47–1.05 s)", format: secs,
			value: func(k *seedRuns) float64 { return k.kvcR.st.sum.TTFTp99 / 1000 }, ok: withinF(0.7, 1.5),
			attribution: []string{attrTail}},
		{name: "Direct share, KVC v1 (τ_append 2048)", published: "42.8 %", tol: "± 5 points", format: pts,
			value: func(k *seedRuns) float64 { return direct(k.v1) }, ok: points(0.428, 0.05),
			attribution: []string{attrV1Gap, attrCauses}},
		{name: "Direct share, v2 − v1", published: "91.7 − 42.8 = 48.9 points", tol: "≥ 25 points", format: func(x float64) string { return fmt.Sprintf("%.1f points", 100*x) },
			parts: []string{"Direct share, KVC v2 1P3D", "Direct share, KVC v1 (τ_append 2048)"},
			value: func(k *seedRuns) float64 { return direct(k.kvc) - direct(k.v1) }, ok: func(x float64) bool { return x >= 0.25 },
			attribution: []string{attrV1Gap}},
	}
}

// computeFigures computes every row over the seeds' runs (kvc[i], kvcR[i],
// v1[i], dp[i] are seed i's).
func computeFigures(kvc, kvcR, v1, dp []*runOut) []Figure {
	var out []Figure
	for _, d := range figDefs() {
		xs := make([]float64, len(kvc))
		for i := range kvc {
			xs[i] = d.value(&seedRuns{kvc[i], kvcR[i], v1[i], dp[i]})
		}
		v := mean(xs)
		f := Figure{Name: d.name, Published: d.published, Emulated: d.format(v), Value: v, Spread: spread(xs, d.format),
			Tolerance: d.tol, InTolerance: d.ok(v), DependsOn: d.dependsOn}
		f.Verdict = verdictOf(d, f.InTolerance, nil)
		out = append(out, f)
	}
	missParts(out)
	return out
}

// missParts makes a miss of every combination (figDef.parts) one of
// whose parts misses, naming them in its attribution.
func missParts(fs []Figure) {
	verdict := map[string]string{}
	for _, f := range fs {
		verdict[f.Name] = f.Verdict
	}
	for i, d := range figDefs() {
		var missed []string
		for _, p := range d.parts {
			if verdict[p] == VerdictMiss {
				missed = append(missed, p)
			}
		}
		if len(missed) == 0 || fs[i].Verdict == VerdictMiss {
			continue
		}
		fs[i].Verdict = VerdictMiss
		fs[i].PartsMissed = missed
	}
}

// verdictOf classes a figure: consistency checks first, then misses, then
// figures a fitted parameter was fitted to or (sensitivity) moves out of
// tolerance, else reproduced.
func verdictOf(d figDef, ok bool, decidedByFitted []string) string {
	switch {
	case d.consistency:
		return VerdictConsistency
	case !ok:
		return VerdictMiss
	case len(d.dependsOn) > 0 || len(decidedByFitted) > 0:
		return VerdictDependsFitted
	}
	return VerdictReproduced
}

// verdictCounts counts the figures per class, in VerdictClasses order.
func verdictCounts(fs []Figure) []VerdictCount {
	out := make([]VerdictCount, len(VerdictClasses))
	for i, c := range VerdictClasses {
		out[i].Class = c
		for _, f := range fs {
			if f.Verdict == c {
				out[i].Figures++
			}
		}
	}
	return out
}

// VerdictCount is how many figures have one verdict class.
type VerdictCount struct {
	Class   string `json:"class"`
	Figures int    `json:"figures"`
}

// countsLine is "6 reproduced, 4 depends-on-fitted, ...".
func countsLine(cs []VerdictCount) string {
	s := ""
	for i, c := range cs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%d %s", c.Figures, c.Class)
	}
	return s
}

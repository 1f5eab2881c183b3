package gpu

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// TableContext is the per-sequence context (tokens) of the decode columns of
// WriteTable and the prompt length of its prefill column.
const TableContext = 8192

// tableMaxTP bounds the tensor-parallel degrees WriteTable tries.
const tableMaxTP = 64

// MinTP returns the default Perf of m on g at the smallest power-of-two
// tensor-parallel degree (up to 64) at which m can be split (Model.ValidTP)
// and the weights leave a KV pool of at least minPoolTokens tokens
// (PoolTokens(memFractionStatic), default reserved memory; minPoolTokens
// below 1 counts as 1). It fails if there is none.
func MinTP(m Model, g GPU, memFractionStatic float64, minPoolTokens int) (Perf, error) {
	if !(memFractionStatic > 0 && memFractionStatic <= 1) {
		return Perf{}, fmt.Errorf("gpu: mem_fraction_static must be in (0, 1], got %g", memFractionStatic)
	}
	if err := m.Validate(); err != nil {
		return Perf{}, err
	}
	if err := g.Validate(); err != nil {
		return Perf{}, err
	}
	var lastErr error
	for tp := 1; tp <= tableMaxTP; tp *= 2 {
		p, err := NewPerf(m, g, tp)
		if err != nil {
			lastErr = err
			continue
		}
		if p.PoolTokens(memFractionStatic) >= max(minPoolTokens, 1) {
			return p, nil
		}
	}
	if lastErr != nil {
		return Perf{}, fmt.Errorf("gpu: %s: no TP up to %d on %s leaves %d pool tokens at mem_fraction_static %g (last error: %w)",
			m.Name, tableMaxTP, g.Name, max(minPoolTokens, 1), memFractionStatic, lastErr)
	}
	return Perf{}, fmt.Errorf("gpu: %s: no TP up to %d on %s leaves %d pool tokens at mem_fraction_static %g",
		m.Name, tableMaxTP, g.Name, max(minPoolTokens, 1), memFractionStatic)
}

// WriteTable writes the `pdemu models` table for the named GPU: one row per
// catalog model with its size, the smallest TP whose pool holds one
// TableContext-token sequence (MinTP), the KV
// bytes per token at that TP, the SGLang pool size, the decode step at batch
// 1 and 32 with TableContext tokens of context per sequence, and the
// prefill rate of one cold TableContext-token prompt. Output is
// deterministic (catalog order, fixed formatting). It fails on an unknown
// GPU, a memFractionStatic outside (0, 1], or a write error.
func WriteTable(w io.Writer, gpuName string, memFractionStatic float64) error {
	g, err := LookupGPU(gpuName)
	if err != nil {
		return err
	}
	if !(memFractionStatic > 0 && memFractionStatic <= 1) {
		return fmt.Errorf("gpu: mem_fraction_static must be in (0, 1], got %g", memFractionStatic)
	}
	if _, err := fmt.Fprintf(w,
		"# %s: %.0f TFLOPS bf16, %.2f TB/s HBM, %.1f GiB, NVLink %.0f GB/s/dir; mem_fraction_static %g\n"+
			"# TP: smallest power of two whose KV pool holds one %d-token sequence; decode: %d context tokens per sequence;\n"+
			"# prefill: one cold %d-token prompt; default efficiencies MFU %.2f, MBU %.2f\n",
		g.Name, g.FLOPS/1e12, g.HBMBandwidth/1e12, g.Memory/(1<<30), g.Interconnect/1e9, memFractionStatic,
		TableContext, TableContext, TableContext, DefaultMFU, DefaultMBU); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tPARAMS\tACTIVE\tTP\tKV B/TOKEN\tPOOL TOKENS\tDECODE b=1 (ms)\tDECODE b=32 (ms)\tb=32 TOK/S\tPREFILL TOK/S")
	for _, m := range modelCatalog {
		p, err := MinTP(m, g, memFractionStatic, TableContext)
		if err != nil {
			fmt.Fprintf(tw, "%s\t%.1fB\t%.1fB\t-\t-\tdoes not fit (TP<=%d)\t-\t-\t-\t-\n", m.Name, m.Params/1e9, m.ActiveParams/1e9, tableMaxTP)
			continue
		}
		d1 := p.DecodeStepTime(1, TableContext)
		d32 := p.DecodeStepTime(32, 32*TableContext)
		fmt.Fprintf(tw, "%s\t%.1fB\t%.1fB\t%d\t%d\t%d\t%s\t%s\t%.0f\t%.0f\n",
			m.Name, m.Params/1e9, m.ActiveParams/1e9, p.TP, p.KVBytesPerToken(),
			p.PoolTokens(memFractionStatic), fmtMS(d1), fmtMS(d32),
			32/d32.Seconds(), p.PrefillThroughput(TableContext))
	}
	return tw.Flush()
}

// fmtMS formats d in milliseconds with two decimals.
func fmtMS(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/1e6) }

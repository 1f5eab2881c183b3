package workload

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"
)

// benchLoader measures a loader's throughput on in-memory data.
func benchLoader(b *testing.B, format string, data []byte, opts LoadOptions) {
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	records := 0
	for b.Loop() {
		src, err := OpenReader(bytes.NewReader(data), "bench", format, opts)
		if err != nil {
			b.Fatal(err)
		}
		for {
			_, err := src.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			records++
		}
	}
	b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkLoadMooncake(b *testing.B) {
	benchLoader(b, FormatMooncake, genMooncake(5000), LoadOptions{})
}

func BenchmarkLoadMooncakeInferSessions(b *testing.B) {
	benchLoader(b, FormatMooncake, genMooncake(5000), LoadOptions{InferSessions: true})
}

func BenchmarkLoadBailian(b *testing.B) {
	benchLoader(b, FormatBailian, genBailian(5000), LoadOptions{})
}

func BenchmarkLoadAzure(b *testing.B) {
	benchLoader(b, FormatAzure, genAzure(5000), LoadOptions{})
}

func BenchmarkLoadTraceLab(b *testing.B) {
	benchLoader(b, FormatTraceLab, genTraceLab(5000), LoadOptions{})
}

func BenchmarkLoadClaudeCode(b *testing.B) {
	benchLoader(b, FormatClaudeCode, genClaudeCode(500), LoadOptions{})
}

// benchSWEBench is the SWE-Bench generator the export benchmarks write:
// 10 sessions, 1,000 requests, seed 1.
func benchSWEBench(b *testing.B) *SWEBench {
	b.Helper()
	g, err := NewSWEBench(SWEBenchConfig{Sessions: 10, Requests: 1000}, 1)
	if err != nil {
		b.Fatal(err)
	}
	return g
}

// exported is what write (WriteJSONL or WriteCompactJSONL) writes of src.
func exported(b *testing.B, write func(io.Writer, Source) error, src Source) []byte {
	b.Helper()
	var buf bytes.Buffer
	if err := write(&buf, src); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// SWE-Bench export, replayed through the Mooncake loader (24-token blocks,
// long prompts: the heaviest JSONL lines).
func BenchmarkLoadMooncakeSWEBenchExport(b *testing.B) {
	benchLoader(b, FormatMooncake, exported(b, WriteJSONL, benchSWEBench(b)), LoadOptions{})
}

// The same export in the compact form (prefix_blocks + new_hash_ids).
func BenchmarkLoadMooncakeSWEBenchCompact(b *testing.B) {
	benchLoader(b, FormatMooncake, exported(b, WriteCompactJSONL, benchSWEBench(b)), LoadOptions{})
}

func BenchmarkSWEBenchGenerator(b *testing.B) {
	b.ReportAllocs()
	records := 0
	for b.Loop() {
		g, err := NewSWEBench(SWEBenchConfig{}, 1)
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := g.Next(); err != nil {
				break
			}
			records++
		}
	}
	b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
}

// benchWrite measures write (WriteJSONL or WriteCompactJSONL) on a fresh
// benchSWEBench generator per iteration (the generator's cost included).
func benchWrite(b *testing.B, write func(io.Writer, Source) error) {
	b.ReportAllocs()
	records := 0
	for b.Loop() {
		if err := write(io.Discard, benchSWEBench(b)); err != nil {
			b.Fatal(err)
		}
		records += 1000
	}
	b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkWriteJSONL(b *testing.B) { benchWrite(b, WriteJSONL) }

// BenchmarkLoadReal loads the shipped traces (../shared/traces; skipped
// when absent) from memory, so that the figure is decoding, not disk.
func BenchmarkLoadReal(b *testing.B) {
	for _, tc := range []struct{ name, path, format string }{
		{"mooncake", "mooncake/synthetic_trace.jsonl", FormatMooncake},
		{"claude-code-0018", "weka-claude-code/trace_0018.json", FormatClaudeCode},
		{"azure", "azure-2023/AzureLLMInferenceTrace_code.csv", FormatAzure},
		{"tracelab", "tracelab/round_trace.sanitized.jsonl", FormatTraceLab},
	} {
		b.Run(tc.name, func(b *testing.B) {
			data, err := os.ReadFile(tracesDir(b, tc.path))
			if err != nil {
				b.Fatal(err)
			}
			benchLoader(b, tc.format, data, LoadOptions{})
		})
	}
}

// The agentic generator's export (pdemu's default workload, full hash_ids
// on every line) replayed through the Mooncake loader.
func BenchmarkLoadMooncakeAgenticExport(b *testing.B) {
	g, err := NewAgentic(AgenticConfig{Sessions: 32}, 1, 0)
	if err != nil {
		b.Fatal(err)
	}
	benchLoader(b, FormatMooncake, exported(b, WriteJSONL, g), LoadOptions{})
}

func BenchmarkWriteCompactJSONL(b *testing.B) { benchWrite(b, WriteCompactJSONL) }

// The agentic generator's compact export (prefix_blocks + new_hash_ids,
// the peer benchmark's agentic trace form) through the Mooncake loader.
func BenchmarkLoadMooncakeAgenticCompact(b *testing.B) {
	g, err := NewAgentic(AgenticConfig{Sessions: 32}, 1, 0)
	if err != nil {
		b.Fatal(err)
	}
	benchLoader(b, FormatMooncake, exported(b, WriteCompactJSONL, g), LoadOptions{})
}

package workload

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func agenticSmall() AgenticConfig { return AgenticConfig{Sessions: 4, Turns: 10} }

// Every loader's output replays to completion through the lead's Driver, in
// open and closed loop, releasing each request exactly once.
func TestDriverReplaysLoaders(t *testing.T) {
	ccDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ccDir, "trace_1.json"), genClaudeCode(6), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ccDir, "trace_2.json"), bytes.Replace(genClaudeCode(3), []byte(`"trace_mem"`), []byte(`"trace_two"`), 1), 0o644))
	sources := map[string]func(t *testing.T) Source{
		"mooncake": func(t *testing.T) Source {
			return openReader(t, string(genMooncake(200)), FormatMooncake, LoadOptions{})
		},
		"mooncake-infer": func(t *testing.T) Source {
			return openReader(t, string(genMooncake(200)), FormatMooncake, LoadOptions{InferSessions: true})
		},
		"bailian": func(t *testing.T) Source { return openReader(t, string(genBailian(200)), FormatBailian, LoadOptions{}) },
		"azure":   func(t *testing.T) Source { return openReader(t, string(genAzure(200)), FormatAzure, LoadOptions{}) },
		"tracelab": func(t *testing.T) Source {
			return openReader(t, string(genTraceLab(95)), FormatTraceLab, LoadOptions{})
		},
		"claude-code": func(t *testing.T) Source {
			src, err := OpenClaudeCode(ccDir, LoadOptions{MaxConcurrent: 1})
			require.NoError(t, err)
			return src
		},
		"bailian-testdata": func(t *testing.T) Source {
			src, err := Open(filepath.Join("testdata", "bailian_small.jsonl"), FormatBailian, LoadOptions{})
			require.NoError(t, err)
			return src
		},
		"swebench": func(t *testing.T) Source {
			g, err := NewSWEBench(SWEBenchConfig{Sessions: 10, Requests: 500}, 1)
			require.NoError(t, err)
			return g
		},
	}
	for name, open := range sources {
		for _, closed := range []bool{false, true} {
			mode := "open"
			if closed {
				mode = "closed"
			}
			t.Run(name+"/"+mode, func(t *testing.T) {
				n := len(drain(t, open(t)))
				require.Positive(t, n)
				require.Len(t, replay(t, open(t), closed), n)
			})
		}
	}
}

// The shipped traces replay too (skipped when absent).
func TestDriverReplaysShippedTraces(t *testing.T) {
	for _, sub := range []string{"mooncake/synthetic_trace.jsonl", "tracelab/round_trace.sanitized.jsonl", "weka-claude-code", "azure-2023/AzureLLMInferenceTrace_code.csv"} {
		t.Run(sub, func(t *testing.T) {
			if testing.Short() && sub == "weka-claude-code" {
				t.Skip("large trace; skipped under -short")
			}
			path := tracesDir(t, sub)
			for _, closed := range []bool{false, true} {
				src, err := Open(path, "", LoadOptions{})
				require.NoError(t, err)
				replay(t, src, closed)
			}
		})
	}
}

package gpu

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteTable(t *testing.T) {
	for _, g := range GPUNames() {
		var sb strings.Builder
		require.NoError(t, WriteTable(&sb, g, 0.835), g)
		out := sb.String()
		assert.Contains(t, out, "# "+g+":")
		assert.Contains(t, out, "POOL TOKENS")
		for _, m := range ModelNames() {
			assert.Contains(t, out, m, g)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		assert.Len(t, lines, 4+len(ModelNames()), g)
		for _, l := range lines {
			assert.Equal(t, strings.TrimRight(l, " "), l, "no trailing blanks")
		}
		var again strings.Builder
		require.NoError(t, WriteTable(&again, strings.ToLower(g), 0.835))
		assert.Equal(t, out, again.String(), "deterministic")
		if g == "H100-SXM" {
			t.Log("\n" + out)
		}
	}
	var sb strings.Builder
	require.NoError(t, WriteTable(&sb, "H100-SXM", 0.835))
	row := lineWith(sb.String(), "qwen3-coder-30b-a3b")
	assert.Equal(t, []string{"qwen3-coder-30b-a3b", "30.5B", "3.4B", "1", "98304", "95208"}, strings.Fields(row)[:6])
	assert.Equal(t, "16", strings.Fields(lineWith(sb.String(), "deepseek-v3"))[3], "FP8 DeepSeek-V3 needs 16 H100s")
	assert.Equal(t, "4", strings.Fields(lineWith(sb.String(), "llama-3.1-70b"))[3])
}

func lineWith(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix+" ") {
			return l
		}
	}
	return ""
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return len(p), nil
}

func TestWriteTableErrors(t *testing.T) {
	var sb strings.Builder
	err := WriteTable(&sb, "H2OO", 0.9)
	assert.ErrorIs(t, err, ErrUnknown)
	assert.Contains(t, err.Error(), "did you mean")
	for _, f := range []float64{0, 1.5, -1} {
		assert.Error(t, WriteTable(&sb, "H100", f), "fraction %g", f)
	}
	assert.ErrorContains(t, WriteTable(&failWriter{}, "H100", 0.9), "disk full")
	assert.ErrorContains(t, WriteTable(&failWriter{n: 1}, "H100", 0.9), "disk full")
}

func TestMinTP(t *testing.T) {
	h100 := mustGPU(t, "H100-SXM")
	p, err := MinTP(mustModel(t, "llama-3.1-70b"), h100, 0.9, 1)
	require.NoError(t, err)
	assert.Equal(t, 2, p.TP)
	p, err = MinTP(mustModel(t, "llama-3.1-70b"), h100, 0.9, 200_000)
	require.NoError(t, err)
	assert.Equal(t, 4, p.TP)
	_, err = MinTP(mustModel(t, "deepseek-v3"), mustGPU(t, "A100-80GB"), 0.05, 1)
	assert.ErrorContains(t, err, "no TP up to 64")
	_, err = MinTP(mustModel(t, "llama-3.1-8b"), h100, 0, 1)
	assert.Error(t, err)
	_, err = MinTP(Model{}, h100, 0.9, 1)
	assert.Error(t, err)
}

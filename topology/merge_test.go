package topology

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOverrideKeepsEveryBlock: an override block matches a base block at
// most once. Two dynamic "crash" blocks of an override stay two (they
// were merged into one), and two decode blocks of one name are reported
// as a plain file reports them (the last one used to win silently).
func TestOverrideKeepsEveryBlock(t *testing.T) {
	over := `extends = "base.hcl"
dynamic "decode" {
  content {
    dynamic "crash" {
      for_each = decode.value == 0 ? [1] : []
      content {
        at            = "10s"
        restart_after = "5s"
      }
    }
    dynamic "crash" {
      for_each = decode.value == 1 ? [1] : []
      content {
        at            = "20s"
        restart_after = "5s"
      }
    }
  }
}
`
	fsys := composeFS(map[string]string{"base.hcl": composeBase, "over.hcl": over})
	spec, err := ParseFS(fsys, "over.hcl", testOpts)
	require.NoError(t, err)
	require.Len(t, spec.Decode, 2)
	require.Len(t, spec.Decode[0].Faults, 1, "d0: the first dynamic crash")
	require.Len(t, spec.Decode[1].Faults, 1, "d1: the second dynamic crash")
	assert.Equal(t, 10*time.Second, spec.Decode[0].Faults[0].At)
	assert.Equal(t, 20*time.Second, spec.Decode[1].Faults[0].At)

	dup := `extends = "base.hcl"
decode "d7" {
  gpu   = "H200-SXM"
  model = "qwen3-coder-30b-a3b"
}
decode "d7" {
  gpu   = "H100-SXM"
  model = "qwen3-coder-30b-a3b"
}
link "p0" "d7" {
  bandwidth = "200Gbps"
}
`
	plain := strings.Replace(dup, `extends = "base.hcl"`, strings.Replace(composeBase, "dynamic \"link\"", "link \"p0\" \"d0\" {\n  bandwidth = \"200Gbps\"\n}\nlink \"p0\" \"d1\" {\n  bandwidth = \"200Gbps\"\n}\ndynamic \"unused\"", 1), 1)
	fsys["dup.hcl"] = &fstest.MapFile{Data: []byte(dup)}
	fsys["plain.hcl"] = &fstest.MapFile{Data: []byte(plain)}
	for _, name := range []string{"dup.hcl", "plain.hcl"} {
		_, err = ParseFS(fsys, name, testOpts)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "Duplicate worker name", name)
	}

	// Two workload blocks in an override are two, as in a plain file.
	fsys["two.hcl"] = &fstest.MapFile{Data: []byte("extends = \"base.hcl\"\nworkload {\n  seed = 1\n}\nworkload {\n  seed = 2\n}\n")}
	_, err = ParseFS(fsys, "two.hcl", testOpts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Duplicate workload block")
}

// TestOverrideManyBlocks: merging is linear (it rebuilt its index per
// block: 20,000 variable blocks took over 20 s). No timing assertion:
// 20,000 blocks parse, each kept.
func TestOverrideManyBlocks(t *testing.T) {
	var b strings.Builder
	b.WriteString("extends = \"base.hcl\"\n")
	const n = 20_000
	for i := range n {
		fmt.Fprintf(&b, "variable \"v%d\" {\n  default = %d\n}\n", i, i)
	}
	fsys := composeFS(map[string]string{"base.hcl": composeBase, "many.hcl": b.String()})
	spec, err := ParseFS(fsys, "many.hcl", testOpts)
	require.NoError(t, err)
	require.Len(t, spec.Decode, 2)
}

// TestExpressionBounds: operator chains are refused before HCL's
// recursive parser and evaluator see them (300 KB of unary minus was a
// Go stack overflow); ordinary expressions are untouched.
func TestExpressionBounds(t *testing.T) {
	for name, src := range map[string]string{
		"minus":       "x = " + strings.Repeat("-", 300_000) + "1\n",
		"bang":        "x = " + strings.Repeat("!", 300_000) + "true\n",
		"spaced":      "x = " + strings.Repeat("- ", 100) + "1\n",
		"newlines":    "x = (" + strings.Repeat("-\n", 100) + "1)\n",
		"binary":      "x = " + strings.Repeat("1+", 10_000) + "1\n",
		"conditional": "x = " + strings.Repeat("true ? 1 : ", 10_000) + "1\n",
		"in a list":   "x = [\n" + strings.Repeat("1 + 1,\n", 5000) + "]\n",
	} {
		msg := parseErr(t, minimal+src, Options{})
		assert.Contains(t, msg, "Expression too complex", name)
		assert.Contains(t, msg, "test.hcl:", name)
	}
	ok := minimal + "variable \"x\" {\n  default = " + strings.Repeat("- ", MaxNesting) + "1 + " + strings.Repeat("1 + ", 100) + "(true ? 1 : 2)\n}\n" +
		"variable \"y\" {\n  default = [\n" + strings.Repeat("-1,\n", 3000) + "]\n}\n" +
		"variable \"z\" {\n  default = 1\n}\n"
	for i := range 2000 {
		ok += fmt.Sprintf("variable \"w%d\" {\n  default = 1 + 2 * 3 - -4\n}\n", i)
	}
	mustParse(t, ok, Options{})
}

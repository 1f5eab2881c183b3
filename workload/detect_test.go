package workload

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDetectSmallAgreesWithFullPeek: where the 64 KB peek decides, it
// answers what the 1 MB one does; a first record or first line longer
// than the small peek is left to the large one; Detect gives the large
// peek's answer on every input.
func TestDetectSmallAgreesWithFullPeek(t *testing.T) {
	ids := strings.Repeat("123456, ", 20000) + "1" // a 160 KB hash_ids array
	cases := []struct {
		name, text string
		small      bool // the small peek decides
	}{
		{"mooncake", `{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1, 2]}` + "\n", true},
		{"mooncake long first line", `{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [` + ids + "]}\n", false},
		{"key after a long value", `{"x": [` + ids + `], "chat_id": 1}` + "\n", false},
		{"bailian", `{"chat_id": 1, "timestamp": 0}` + "\n", true},
		{"tracelab", `{"session_id": "a", "round_index": 0}` + "\n", true},
		{"no newline", `{"input_length": 5}`, false},
		{"pretty document", "{\n  \"requests\": [\n" + strings.Repeat("    {\"a\": 1},\n", 10000) + "    {\"a\": 1}\n  ]\n}\n", false},
		{"small pretty document", "{\n  \"requests\": []\n}\n", true},
		{"azure header", "TIMESTAMP,ContextTokens,GeneratedTokens\n1,2,3\n", false},
		{"unknown", `{"foo": 1}` + "\n", false},
		{"truncated", `{"input_length": 5, "hash_ids": [1,` + "\n", false},
	}
	dir := t.TempDir()
	for _, c := range cases {
		full, fullErr := detectReader(bufio.NewReaderSize(strings.NewReader(c.text), 1<<20))
		got, ok := detectSmall(bufio.NewReaderSize(strings.NewReader(c.text), detectSmallPeek))
		assert.Equal(t, c.small, ok, c.name)
		if ok {
			require.NoError(t, fullErr, c.name)
			assert.Equal(t, full, got, c.name)
		}
		p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".jsonl")
		require.NoError(t, os.WriteFile(p, []byte(c.text), 0o644))
		d, err := Detect(p)
		if fullErr != nil {
			assert.Error(t, err, c.name)
			continue
		}
		require.NoError(t, err, c.name)
		assert.Equal(t, full, d, c.name)
	}
}

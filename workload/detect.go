package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pdemu/pdemu/internal/regular"
)

// Detect guesses the trace format of path: a directory of trace_*.json is
// claude-code, a .csv (or a file whose first line names ContextTokens) is
// azure, a JSON document with "requests" is a single claude-code session,
// and for JSONL the keys of the first record decide (chat_id: bailian;
// session_id + round_index: tracelab; input_length, hash_ids or
// new_hash_ids: mooncake, full or compact form).
func Detect(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("workload: %w", err)
	}
	if fi.IsDir() {
		files, err := claudeFiles(path)
		if err != nil {
			return "", err
		}
		if len(files) == 0 {
			return "", fmt.Errorf("workload: %s: directory has no trace_*.json files (known formats: %s)", path, strings.Join(Formats(), ", "))
		}
		return FormatClaudeCode, nil
	}
	if strings.EqualFold(filepath.Ext(path), ".csv") {
		return FormatAzure, nil
	}
	f, err := regular.Open(path)
	if err != nil {
		return "", fmt.Errorf("workload: %w", err)
	}
	defer f.Close()
	format, err := detectReader(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return "", fmt.Errorf("workload: %s: %w", path, err)
	}
	return format, nil
}

// detectReader peeks at the start of br (without consuming it).
func detectReader(br *bufio.Reader) (string, error) {
	head, _ := br.Peek(br.Size())
	if i := bytes.IndexByte(head, '\n'); i >= 0 && bytes.Contains(head[:i], []byte("ContextTokens")) {
		return FormatAzure, nil
	}
	keys := topLevelKeys(head)
	has := func(k string) bool { _, ok := keys[k]; return ok }
	switch {
	case has("chat_id") || has("parent_chat_id"):
		return FormatBailian, nil
	case has("round_index") || has("input_tokens_total") || has("newly_append_tokens"):
		return FormatTraceLab, nil
	case has("requests"):
		return FormatClaudeCode, nil
	case has("input_length") || has("hash_ids") || has("new_hash_ids"):
		return FormatMooncake, nil
	}
	return "", fmt.Errorf("cannot detect the trace format from the first record (known formats: %s)", strings.Join(Formats(), ", "))
}

// topLevelKeys lists the keys of the JSON object at the start of b; it
// tolerates a truncated document and stops at the first error.
func topLevelKeys(b []byte) map[string]bool {
	keys := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return keys
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return keys
		}
		k, ok := t.(string)
		if !ok {
			return keys
		}
		keys[k] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return keys
		}
	}
	return keys
}

package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
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
	// Most traces show their first record whole in the first 64 KB: decide
	// on those (a 1 MB buffer and read per open of a 1 MB trace was 4 % of
	// a Mooncake run's CPU, with its page faults); else peek at 1 MB.
	if format, ok := detectSmall(bufio.NewReaderSize(f, detectSmallPeek)); ok {
		return format, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", fmt.Errorf("workload: %w", err)
	}
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

// detectSmallPeek is what detectSmall peeks at.
const detectSmallPeek = 64 << 10

// detectSmall is detectReader when the first line and the first record
// both end within what br peeks at: its answer is then the one a larger
// peek gives (ok false otherwise, and when the record is not decided).
func detectSmall(br *bufio.Reader) (string, bool) {
	head, _ := br.Peek(br.Size())
	if bytes.IndexByte(head, '\n') < 0 {
		return "", false // the first line may be longer: the Azure test needs it whole
	}
	if _, whole := topLevelKeysWhole(head); !whole {
		return "", false
	}
	format, err := detectReader(br)
	return format, err == nil
}

// topLevelKeys lists the keys of the JSON object at the start of b; it
// tolerates a truncated document and stops at the first error.
func topLevelKeys(b []byte) map[string]bool {
	keys, _ := topLevelKeysWhole(b)
	return keys
}

// topLevelKeysWhole is topLevelKeys, and whether the object ended within
// b (its keys are then those of any longer b with the same start).
func topLevelKeysWhole(b []byte) (map[string]bool, bool) {
	keys := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return keys, false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return keys, false
		}
		k, ok := t.(string)
		if !ok {
			return keys, false
		}
		keys[k] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return keys, false
		}
	}
	t, err := dec.Token()
	return keys, err == nil && t == json.Delim('}')
}

package workload

import (
	"bufio"
	"io"
	"os"
	"strings"
)

// traceFormat is one trace format: its name, the aliases a user may give,
// and its two loaders (a path; a reader). Every format Open and
// OpenReader understand is a row of traceFormats, and nothing else: a
// format without a row is unknown, never parsed as another one.
type traceFormat struct {
	name    string
	aliases []string
	open    func(path string, opts LoadOptions) (Source, error)
	read    func(br *bufio.Reader, name string, opts LoadOptions) (Source, error)
}

// traceFormats is the table of trace formats, sorted by name (Formats).
var traceFormats = []traceFormat{
	streamingFormat(FormatAzure, []string{"azure-2023", "azure-csv"}, NewAzure),
	streamingFormat(FormatBailian, []string{"qwen", "qwen-bailian"}, NewBailian),
	{FormatClaudeCode, []string{"claudecode", "claude_code", "weka", "weka-claude-code"},
		func(p string, o LoadOptions) (Source, error) { return asSource(OpenClaudeCode(p, o)) },
		func(r *bufio.Reader, n string, o LoadOptions) (Source, error) {
			return asSource(NewClaudeCodeSession(r, n, o))
		}},
	streamingFormat(FormatMooncake, nil, NewMooncake),
	{FormatTraceLab, nil,
		func(p string, o LoadOptions) (Source, error) { return asSource(OpenTraceLab(p, o)) },
		func(r *bufio.Reader, n string, o LoadOptions) (Source, error) { return asSource(NewTraceLab(r, n, o)) }},
}

// streamingFormat is the row of a streaming loader (Azure, Bailian,
// Mooncake): a path is opened with openStreaming over the same constructor
// that reads a reader, and the loader closes the file.
func streamingFormat[L interface {
	Source
	own(*os.File)
}](name string, aliases []string, newLoader func(io.Reader, string, LoadOptions) (L, error)) traceFormat {
	return traceFormat{name, aliases,
		func(p string, o LoadOptions) (Source, error) { return asSource(openStreaming(p, o, newLoader)) },
		func(r *bufio.Reader, n string, o LoadOptions) (Source, error) { return asSource(newLoader(r, n, o)) }}
}

// Formats returns the trace format names Open accepts, sorted.
func Formats() []string {
	out := make([]string, len(traceFormats))
	for i, f := range traceFormats {
		out[i] = f.name
	}
	return out
}

// formatOf finds a user-given format name (case-insensitive, or one of
// its aliases) in the table.
func formatOf(f string) (*traceFormat, bool) {
	f = strings.ToLower(strings.TrimSpace(f))
	for i := range traceFormats {
		t := &traceFormats[i]
		if t.name == f {
			return t, true
		}
		for _, a := range t.aliases {
			if a == f {
				return t, true
			}
		}
	}
	return nil, false
}

// canonicalFormat maps a user-given format name to one of the Format
// constants.
func canonicalFormat(f string) (string, bool) {
	t, ok := formatOf(f)
	if !ok {
		return "", false
	}
	return t.name, true
}

// Package dist renders what runs pdemu beyond one machine on the engines
// the field already runs: a Kubernetes Indexed Job (and the Job that
// merges its shards) for a 'pdemu compare' plan, a Slurm 'sbatch --array'
// script for the same, and a StatefulSet with its headless Service for N
// 'pdemu serve --group' processes.
//
// Contract: every function is pure and deterministic (no I/O, no clock):
// the same arguments give the same bytes. Kubernetes objects are built
// from the official k8s.io/api types and rendered with sigs.k8s.io/yaml,
// so a manifest cannot drift from the API; a test decodes each one
// strictly back into its type. The pdemu command lines a manifest runs
// are given by the caller (Args), so this package does not know the CLI.
package dist

import (
	"bytes"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// ExitBadInput is pdemu's exit code for bad input (a bad scenario, flag
// or trace): retrying cannot help, so a Job's podFailurePolicy fails the
// index at once on it, and retries any other failure.
const ExitBadInput = 2

// ResultsMount is where the results volume is mounted in every pod.
const ResultsMount = "/results"

// render marshals objects as one multi-document YAML stream, each
// document after its comment line.
func render(docs ...doc) ([]byte, error) {
	var buf bytes.Buffer
	for i, d := range docs {
		if i > 0 {
			buf.WriteString("---\n")
		}
		for _, l := range strings.Split(strings.TrimRight(d.comment, "\n"), "\n") {
			buf.WriteString("# " + l + "\n")
		}
		b, err := yaml.Marshal(d.obj)
		if err != nil {
			return nil, fmt.Errorf("dist: rendering %T: %w", d.obj, err)
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}

type doc struct {
	comment string
	obj     any
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ShellJoin quotes each argument for a POSIX shell and joins them.
func ShellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// dnsLabel turns s into an RFC 1123 label of at most max characters
// (lower case, digits and '-', starting and ending alphanumeric).
func dnsLabel(s string, max int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	for strings.Contains(out, "--") {
		out = strings.ReplaceAll(out, "--", "-")
	}
	if len(out) > max {
		out = strings.TrimRight(out[:max], "-")
	}
	if out == "" {
		out = "pdemu"
	}
	return out
}

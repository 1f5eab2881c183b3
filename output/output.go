// Package output writes a run's result (actors.Result) as the files of a
// run directory: per_request.csv, instances.csv, summary.json and, where
// the policy has them, sessions.csv and routing_log.jsonl.
//
// Contract: Write is deterministic (the same Result gives the same bytes)
// and never leaves a file of another run in the directory it writes.
package output

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pdemu/pdemu/actors"
	"github.com/pdemu/pdemu/metrics"
)

// Write writes res into dir, creating it if needed.
func Write(dir string, res *actors.Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	write := func(name string, f func(io.Writer) error) error {
		fh, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := f(fh); err != nil {
			fh.Close()
			return fmt.Errorf("%s: %w", name, err)
		}
		return fh.Close()
	}
	return errors.Join(
		write("per_request.csv", func(w io.Writer) error { return metrics.WritePerRequest(w, res.Records) }),
		write("instances.csv", func(w io.Writer) error {
			return metrics.WriteInstances(w, res.Series, res.SampleInterval, res.End)
		}),
		write("summary.json", func(w io.Writer) error { return metrics.WriteSummary(w, res.Summary) }),
		func() error {
			if res.Summary.PerBucket == nil {
				return nil
			}
			return write("routing_log.jsonl", func(w io.Writer) error { return metrics.WriteRoutingLog(w, res.Records) })
		}(),
		func() error {
			if res.Sessions == nil {
				return nil
			}
			return write("sessions.csv", func(w io.Writer) error { return metrics.WriteSessions(w, res.Sessions) })
		}(),
	)
}

package main

import (
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pdemu/pdemu/topology"
)

// checkFlagValues refuses, for every command, the flag values that would
// otherwise be coerced silently: a float flag that is NaN or infinite
// (--max-failed NaN disabled exit 3; --time-scale NaN passed "> 0" and
// never ended), a --max-failed share above 1 (never exceeded), --time-scale above topology.MaxTimeScale, an empty --out,
// and a --var NAME or --set PATH given twice (the last used to win).
func checkFlagValues(cmd *cobra.Command) error {
	var err error
	seen := map[string]map[string]bool{}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if err != nil {
			return
		}
		switch f.Value.Type() {
		case "float64", "float32":
			v, perr := strconv.ParseFloat(f.Value.String(), 64)
			if perr == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
				err = usageErr("--%s must be a finite number, got %s", f.Name, f.Value.String())
				return
			}
			if f.Name == "max-failed" && perr == nil && v > 1 {
				// A share: above 1 it could never be exceeded, silently
				// disabling the check; negative is the documented "no limit".
				err = usageErr("--max-failed is a share of the requests, at most 1 (negative: no limit), got %s", f.Value.String())
				return
			}
			if f.Name == "time-scale" && v > topology.MaxTimeScale {
				err = usageErr("--time-scale must be at most %g (emulated time at most that many times faster than real time), got %s", float64(topology.MaxTimeScale), f.Value.String())
			}
		case "string":
			if f.Name == "out" && strings.TrimSpace(f.Value.String()) == "" {
				err = usageErr("--out must name a directory or file, got %q", f.Value.String())
			}
		case "stringArray":
			if f.Name != "var" && f.Name != "set" {
				return
			}
			sv, ok := f.Value.(pflag.SliceValue)
			if !ok {
				return
			}
			for _, s := range sv.GetSlice() {
				k, _, ok := strings.Cut(s, "=")
				if !ok {
					continue // the command's own parser says what is wrong
				}
				k = strings.TrimSpace(k)
				if seen[f.Name] == nil {
					seen[f.Name] = map[string]bool{}
				}
				if seen[f.Name][k] {
					err = usageErr("--%s %s given twice: give each once (which value was meant?)", f.Name, k)
					return
				}
				seen[f.Name][k] = true
			}
		}
	})
	return err
}

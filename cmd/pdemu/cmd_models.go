package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pdemu/pdemu/gpu"
)

func newModelsCmd() *cobra.Command {
	var g string
	var frac float64
	c := &cobra.Command{
		Use:   "models",
		Short: "List model presets with derived figures on a GPU",
		Long: `List the model presets (the names HCL's model = "..." accepts) with
the figures derived for --gpu: KV bytes per token, the KV pool a worker
gets at --mem-fraction, prefill and decode speeds.`,
		Example: `  pdemu models
  pdemu models --gpu H100-SXM --mem-fraction 0.9`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := gpu.LookupGPU(g); err != nil {
				hint := ""
				if s := closest(g, gpu.GPUNames()); s != "" {
					hint = fmt.Sprintf(". Did you mean %q?", s)
				}
				return usageErr("%v%s", err, hint)
			}
			if !(frac > 0 && frac <= 1) { // also refuses NaN
				return usageErr("--mem-fraction must be in (0, 1], got %v", frac)
			}
			return gpu.WriteTable(cmd.OutOrStdout(), g, frac)
		},
	}
	c.Flags().StringVar(&g, "gpu", "H200-SXM", "GPU preset for the derived figures ("+strings.Join(gpu.GPUNames(), ", ")+")")
	c.Flags().Float64Var(&frac, "mem-fraction", 0.88, "SGLang mem_fraction_static for the pool size")
	return c
}

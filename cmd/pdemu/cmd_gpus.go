package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/pdemu/pdemu/gpu"
)

func newGPUsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "gpus",
		Short: "List the GPU presets (the names HCL's gpu = \"...\" accepts)",
		Long: `List the GPU presets with the figures the cost model uses: dense bf16
peak FLOP/s, HBM bandwidth, the memory the driver reports (what the KV pool
is sized from) and the NVLink bandwidth per direction, with their source.
'pdemu models --gpu NAME' shows what a model gets on one.`,
		Example: "  pdemu gpus\n  pdemu models --gpu H100-SXM",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "gpu\tbf16 TFLOP/s\tHBM TB/s\tmemory GiB\tNVLink GB/s\tsource")
			for _, g := range gpu.GPUs() {
				fmt.Fprintf(w, "%s\t%.0f\t%.3g\t%.1f\t%.0f\t%s\n", g.Name, g.FLOPS/1e12, g.HBMBandwidth/1e12, g.Memory/(1<<30), g.Interconnect/1e9, g.Source)
			}
			return w.Flush()
		},
	}
}

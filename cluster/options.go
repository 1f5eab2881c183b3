package cluster

import (
	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/topology"
)

// ParseOptions are topology.Options that check GPU and model preset names
// against the gpu catalog (with did-you-mean suggestions), for the CLI and
// the experiments alike.
func ParseOptions(vars map[string]string) topology.Options {
	return topology.Options{
		Vars: vars,
		KnownGPU: func(n string) bool {
			_, err := gpu.LookupGPU(n)
			return err == nil
		},
		KnownModel: func(n string) bool {
			_, err := gpu.LookupModel(n)
			return err == nil
		},
		ValidTP: func(model string, tp int) error {
			m, err := gpu.LookupModel(model)
			if err != nil {
				return nil // KnownModel reports it
			}
			return m.ValidTP(tp)
		},
		GPUNames:   gpu.GPUNames(),
		ModelNames: gpu.ModelNames(),
	}
}

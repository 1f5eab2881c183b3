package main

import (
	"fmt"
	"math"

	"github.com/pdemu/pdemu/cluster"
	"github.com/pdemu/pdemu/topology"
	"github.com/pdemu/pdemu/transfer"
)

// noEffectSlack is how much of a configured bandwidth the ceiling may
// take before the bandwidth counts as having no effect: the default 200
// Gb/s RDMA link delivers 21.8 GB/s before RDMA's 20 GB/s ceiling, a loss
// of 8 %, and does not warn.
const noEffectSlack = 1.1

// noEffectWarnings are the configured values of spec that change nothing:
// a link bandwidth above what the NIC's max_rate lets through (a 200, 400
// and 800 Gb/s sweep over RDMA's 20 GB/s default ceiling gives identical
// runs). NICs with the same figures share one line.
func noEffectWarnings(spec *topology.Spec) []string {
	cfgs, err := cluster.NICConfigs(spec)
	if err != nil {
		return nil // the run reports it
	}
	var order []string
	nics := map[string][]string{}
	for _, c := range cfgs {
		if !(c.LineRate > 0) {
			continue
		}
		eff := c.EffectiveRate()
		uncapped := c
		uncapped.MaxRate = math.Inf(1)
		line := uncapped.EffectiveRate() // efficiency × bandwidth
		if line <= noEffectSlack*eff {
			continue
		}
		ceiling, src := c.MaxRate, "max_rate"
		if ceiling == 0 {
			ceiling, src = transfer.DefaultMaxRate(c.Transport), fmt.Sprintf("%s's default max_rate, the host path's ceiling", c.Transport)
		}
		knee := c.LineRate * ceiling / line // the bandwidth at which the ceiling starts to bind
		msg := fmt.Sprintf("bandwidth %.0f Gb/s has no effect above %.0f Gb/s: the NIC delivers at most %.1f GB/s (%s), so the effective rate is %.1f GB/s, not %.1f GB/s; raise max_rate to lift the ceiling",
			c.LineRate*8/1e9, knee*8/1e9, ceiling/1e9, src, eff/1e9, line/1e9)
		if _, ok := nics[msg]; !ok {
			order = append(order, msg)
		}
		nics[msg] = append(nics[msg], c.Name)
	}
	var out []string
	for _, msg := range order {
		names := nics[msg]
		who := "NIC " + names[0]
		if len(names) > 1 {
			who = fmt.Sprintf("%d NICs (%s, ...)", len(names), names[0])
		}
		out = append(out, who+": "+msg)
	}
	return out
}

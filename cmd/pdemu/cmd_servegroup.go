package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pdemu/pdemu/compare"
	"github.com/pdemu/pdemu/dist"
	"github.com/pdemu/pdemu/report"
	"github.com/pdemu/pdemu/topology"
)

// serveGroupFlags are serve's flags for a fleet of groups
// (docs/DISTRIBUTED.md). --image, --cpu and --memory share their names
// with compare's distFlags but not their target (k8s vs k8s-job/slurm),
// unit (a group vs a shard), defaults or help, so each command registers
// its own.
type serveGroupFlags struct {
	group  string
	emit   string
	groups int
	image  string
	port   int
	cpu    string
	memory string
}

func (g *serveGroupFlags) register(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&g.group, "group", "", "serve group I of the scenario split into N self-contained P/D groups: I/N (metrics labelled group=I; merge the groups' --out with 'pdemu report')")
	fl.StringVar(&g.emit, "emit", "", "print instead of serving: k8s (a StatefulSet of --groups pods, pod I serving --group I/N, and its headless Service)")
	fl.IntVar(&g.groups, "groups", 0, "with --emit k8s: the number of groups N")
	fl.StringVar(&g.image, "image", "pdemu:latest", "with --emit k8s: the container image (pdemu on its PATH)")
	fl.IntVar(&g.port, "port", 8000, "with --emit k8s: the API port of every pod")
	fl.StringVar(&g.cpu, "cpu", "2", "with --emit k8s: CPUs per group")
	fl.StringVar(&g.memory, "memory", "4Gi", "with --emit k8s: memory per group")
}

// parseGroup reads --group I/N ("" = the whole scenario).
func parseGroup(s string) (*compare.Shard, error) {
	if s == "" {
		return nil, nil
	}
	is, ns, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(is)
	n, err2 := strconv.Atoi(ns)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return nil, usageErr("--group %q: want I/N with 0 <= I < N, e.g. 0/4", s)
	}
	return &compare.Shard{Index: i, Count: n}, nil
}

// groupSpec narrows spec to its group (nil: unchanged).
func groupSpec(spec *topology.Spec, g *compare.Shard) (*topology.Spec, error) {
	if g == nil {
		return spec, nil
	}
	gs, err := spec.Group(g.Index, g.Count)
	if err != nil {
		return nil, badInput(err)
	}
	return gs, nil
}

// writeGroupParams records the group in dir/params.json, so that
// 'pdemu report' merges the groups of one fleet in group order and
// refuses a missing group or another fleet's.
func writeGroupParams(dir, file string, f *serveFlags, spec *topology.Spec, g *compare.Shard) error {
	vars, err := f.varMap()
	if err != nil {
		return err
	}
	if file == "" {
		file = spec.Source
	}
	return report.WriteParams(dir, compare.GroupParams(file, spec.Digest, f.router, vars, f.set, *g))
}

// emitServe prints the StatefulSet and headless Service of --groups groups
// after checking that the scenario splits into them.
func emitServe(cmd *cobra.Command, f *serveFlags, file string, spec *topology.Spec) error {
	g := &f.groups
	if g.emit != "k8s" {
		return usageErr("--emit %q: want k8s", g.emit)
	}
	if g.groups < 1 {
		return usageErr("--emit k8s needs --groups N (N >= 1)")
	}
	if g.group != "" {
		return usageErr("--group and --emit do not go together: pod I of the StatefulSet serves --group I/N")
	}
	for i := range g.groups {
		if _, err := spec.Group(i, g.groups); err != nil {
			return badInput(err)
		}
	}
	args := []string{"serve"}
	if file != "" {
		args = append(args, file)
	}
	for _, s := range f.set {
		args = append(args, "--set", s)
	}
	for _, v := range f.vars {
		args = append(args, "--var", v)
	}
	if f.router != "" {
		args = append(args, "--router", f.router)
	}
	if f.timeScale > 0 {
		args = append(args, "--time-scale", strconv.FormatFloat(f.timeScale, 'g', -1, 64))
	}
	if f.model != "pdemu" {
		args = append(args, "--model", f.model)
	}
	args = append(args, "--listen", fmt.Sprintf("0.0.0.0:%d", g.port), "--allow-remote", "--out", filepath.Join(dist.ResultsMount, "out"), "--force")
	name := "pdemu-" + strings.TrimSuffix(filepath.Base(spec.Source), ".hcl")
	b, err := dist.RenderServe(dist.ServeSpec{Name: name, Image: g.image, Groups: g.groups, Port: g.port, Args: args, CPU: g.cpu, Memory: g.memory})
	if err != nil {
		return badInput(err)
	}
	_, err = cmd.OutOrStdout().Write(b)
	return err
}

// groupNote is " group I/N (P prefill, D decode)" for a served group.
func groupNote(g *compare.Shard, spec *topology.Spec) string {
	if g == nil {
		return ""
	}
	return fmt.Sprintf(" group %s (%d prefill, %d decode: %s..%s)", g, len(spec.Prefill), len(spec.Decode),
		spec.Decode[0].Name, spec.Decode[len(spec.Decode)-1].Name)
}

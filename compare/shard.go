package compare

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pdemu/pdemu/report"
)

// setPlan numbers runs in plan order and stamps each with the plan's size
// and digest: the SHA-256 of the JSON of every run's parameters (names,
// scenarios, --set, seeds, traces, --var, --max-requests) in plan order.
// Two invocations that expand to the same plan get the same digest, so
// shards of one plan recognise each other and shards of different plans
// do not mix.
func setPlan(runs []report.Params) {
	for i := range runs {
		runs[i].PlanIndex, runs[i].PlanSize, runs[i].PlanDigest = nil, 0, ""
	}
	b, err := json.Marshal(runs)
	if err != nil { // report.Params always marshals
		panic(err)
	}
	sum := sha256.Sum256(b)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	for i := range runs {
		idx := i
		runs[i].PlanIndex, runs[i].PlanSize, runs[i].PlanDigest = &idx, len(runs), digest
	}
}

// Shard selects the plan rows whose index mod Count is Index.
type Shard struct{ Index, Count int }

// String is "I/N".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Has reports whether plan row i belongs to the shard.
func (s Shard) Has(i int) bool { return i%s.Count == s.Index }

// Select returns the runs of the shard, in plan order.
func (s Shard) Select(runs []report.Params) []report.Params {
	var out []report.Params
	for i, r := range runs {
		if s.Has(i) {
			out = append(out, r)
		}
	}
	return out
}

// The environment variables --shard env reads. Kubernetes Indexed Jobs
// set JOB_COMPLETION_INDEX but not the count, so the emitted Job sets
// EnvShardCount (the Job's completions) beside it; Slurm job arrays set
// SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_COUNT;
// any other engine sets the generic pair EnvShardIndex and EnvShardCount.
const (
	EnvShardIndex = "PDEMU_SHARD_INDEX"
	EnvShardCount = "PDEMU_SHARD_COUNT"
	EnvK8sIndex   = "JOB_COMPLETION_INDEX"
	EnvSlurmID    = "SLURM_ARRAY_TASK_ID"
	EnvSlurmMin   = "SLURM_ARRAY_TASK_MIN"
	EnvSlurmCount = "SLURM_ARRAY_TASK_COUNT"
)

// ParseShard reads --shard: "I/N" (0 <= I < N), or "env" to read the
// index and count from the engine's environment through getenv, trying
// in order the generic pair (PDEMU_SHARD_INDEX, PDEMU_SHARD_COUNT),
// a Kubernetes Indexed Job (JOB_COMPLETION_INDEX, with the count from
// PDEMU_SHARD_COUNT) and a Slurm array (SLURM_ARRAY_TASK_ID minus
// SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_COUNT). count, when > 0 (the
// --shard-count flag), gives the count for env instead of the variables.
// Errors name the variable and value at fault.
func ParseShard(s string, count int, getenv func(string) string) (Shard, error) {
	if s != "env" {
		if count > 0 {
			return Shard{}, fmt.Errorf("--shard-count goes with --shard env; --shard %s already gives the count", s)
		}
		i, n, ok := strings.Cut(s, "/")
		if !ok {
			return Shard{}, fmt.Errorf("--shard %q: want I/N (e.g. 0/4) or env", s)
		}
		return makeShard(fmt.Sprintf("--shard %q", s), i, n)
	}
	countFrom := func(v string) (string, string) {
		if count > 0 {
			return "--shard-count", strconv.Itoa(count)
		}
		return v, getenv(v)
	}
	switch {
	case getenv(EnvShardIndex) != "":
		cn, cv := countFrom(EnvShardCount)
		if cv == "" {
			return Shard{}, fmt.Errorf("--shard env: %s is set but %s is not: set both", EnvShardIndex, EnvShardCount)
		}
		return makeShard(fmt.Sprintf("--shard env (%s=%q, %s=%q)", EnvShardIndex, getenv(EnvShardIndex), cn, cv), getenv(EnvShardIndex), cv)
	case getenv(EnvK8sIndex) != "":
		cn, cv := countFrom(EnvShardCount)
		if cv == "" {
			return Shard{}, fmt.Errorf("--shard env: %s is set (a Kubernetes Indexed Job) but not the count: set %s to the Job's completions or pass --shard-count N", EnvK8sIndex, EnvShardCount)
		}
		return makeShard(fmt.Sprintf("--shard env (%s=%q, %s=%q)", EnvK8sIndex, getenv(EnvK8sIndex), cn, cv), getenv(EnvK8sIndex), cv)
	case getenv(EnvSlurmID) != "":
		id, err := strconv.Atoi(getenv(EnvSlurmID))
		if err != nil {
			return Shard{}, fmt.Errorf("--shard env: %s=%q is not an integer", EnvSlurmID, getenv(EnvSlurmID))
		}
		lo := 0
		if m := getenv(EnvSlurmMin); m != "" {
			if lo, err = strconv.Atoi(m); err != nil {
				return Shard{}, fmt.Errorf("--shard env: %s=%q is not an integer", EnvSlurmMin, m)
			}
		}
		cn, cv := countFrom(EnvSlurmCount)
		if cv == "" {
			return Shard{}, fmt.Errorf("--shard env: %s is set (a Slurm array) but %s is not", EnvSlurmID, EnvSlurmCount)
		}
		return makeShard(fmt.Sprintf("--shard env (%s=%d - %s=%d, %s=%q)", EnvSlurmID, id, EnvSlurmMin, lo, cn, cv), strconv.Itoa(id-lo), cv)
	}
	return Shard{}, fmt.Errorf("--shard env: none of %s, %s (Kubernetes) or %s (Slurm) is set", EnvShardIndex, EnvK8sIndex, EnvSlurmID)
}

func makeShard(what, i, n string) (Shard, error) {
	idx, err := strconv.Atoi(strings.TrimSpace(i))
	if err != nil {
		return Shard{}, fmt.Errorf("%s: index %q is not an integer", what, i)
	}
	cnt, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil {
		return Shard{}, fmt.Errorf("%s: count %q is not an integer", what, n)
	}
	if cnt < 1 {
		return Shard{}, fmt.Errorf("%s: count must be >= 1, got %d", what, cnt)
	}
	if idx < 0 || idx >= cnt {
		return Shard{}, fmt.Errorf("%s: index must be in [0, %d), got %d", what, cnt, idx)
	}
	return Shard{Index: idx, Count: cnt}, nil
}

// PlanFile is the name of the plan a compare directory records beside
// runs/: every shard writes the same bytes, so merges name missing rows.
const PlanFile = "plan.json"

// planDoc is plan.json.
type planDoc struct {
	Digest string          `json:"digest"`
	Size   int             `json:"size"`
	Runs   []report.Params `json:"runs"`
}

// WritePlan writes out/plan.json (atomically: shards sharing out write
// the same bytes).
func WritePlan(out string, runs []report.Params) error {
	d := planDoc{Runs: runs, Size: len(runs)}
	if len(runs) > 0 {
		d.Digest = runs[0].PlanDigest
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(out, ".plan-*.json")
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), filepath.Join(out, PlanFile))
}

// readPlan reads dir/plan.json (nil when absent or unreadable: it only
// names rows in messages).
func readPlan(dir string) *planDoc {
	b, err := os.ReadFile(filepath.Join(dir, PlanFile))
	if err != nil {
		return nil
	}
	var d planDoc
	if json.Unmarshal(b, &d) != nil {
		return nil
	}
	return &d
}

// GroupParams are the params.json of group g of a scenario served by
// 'pdemu serve --group I/N': row I of an N-row plan whose digest covers
// the scenario's digest, --var, --set, the router and N, so the groups of
// one fleet merge (Merge) into one study and groups of different fleets
// do not.
func GroupParams(scenario, scenarioDigest, router string, vars map[string]string, set []string, g Shard) report.Params {
	b, err := json.Marshal(struct {
		Scenario, Digest, Router string
		Vars                     map[string]string
		Set                      []string
		Groups                   int
	}{scenario, scenarioDigest, router, vars, set, g.Count})
	if err != nil {
		panic(err)
	}
	sum := sha256.Sum256(b)
	idx := g.Index
	return report.Params{
		Name:     report.SanitizeName(fmt.Sprintf("%s__group=%d-of-%d", strings.TrimSuffix(filepath.Base(scenario), ".hcl"), g.Index, g.Count)),
		Scenario: scenario, Router: router, Set: set, Vars: vars, Varied: []string{"group"},
		PlanIndex: &idx, PlanSize: g.Count, PlanDigest: "sha256:" + hex.EncodeToString(sum[:]),
	}
}

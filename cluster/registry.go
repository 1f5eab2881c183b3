package cluster

import (
	"fmt"
	"sort"

	"github.com/pdemu/pdemu/policy"
	"github.com/pdemu/pdemu/policy/bucket"
	"github.com/pdemu/pdemu/topology"
)

// RouterPolicy is what the P/D router node needs from a policy.
type RouterPolicy interface {
	Begin(ds *policy.Dispatch) policy.Step
}

// admissionPolicy is implemented by policies that use worker-side admission.
type admissionPolicy interface {
	Admitted(ds *policy.Dispatch, d int, mode policy.Mode) policy.Step
	Rejected(ds *policy.Dispatch, d int, reason string) policy.Step
}

// feedbackPolicy is implemented by policies that track load and residency.
type feedbackPolicy interface {
	Finished(d int)
	Evicted(d int, s int32)
}

// sessionPolicy is implemented by policies with per-session counters.
type sessionPolicy interface {
	Sessions(f func(s int32, st policy.SessionStats))
}

// Tier is where a policy routes: a P/D router block, a bucket's local
// router (also a router block over one pool of fused workers), or the
// global router between buckets.
type Tier uint8

// Tiers.
const (
	TierPD Tier = iota + 1
	TierLocal
	TierGlobal
)

// Constructor builds a policy of one tier; exactly the field of its tier
// is set.
type Constructor struct {
	PD     func(r topology.Router, prefill, decode int) (RouterPolicy, error)
	Local  func(cfg bucket.LocalConfig, instances int) (bucket.Local, error)
	Global func(cfg bucket.GlobalConfig, buckets []bucket.BucketConfig) (bucket.Global, error)
	// SnapshotBackup (P/D): the prefill workers keep the seed-time
	// snapshot of a session's prefix as its backup, the reseed source of
	// KVC (docs/MODEL.md §7.6), unless the router sets
	// prefill_cache_backup.
	SnapshotBackup bool
}

// PolicyKey names a policy within its tier (kvc is both a P/D and a local
// policy).
type PolicyKey struct {
	Tier Tier
	Name string
}

// Registry is every routing policy the emulator runs, by tier and by the
// name the HCL uses. Adding a P/D policy means adding one entry here and
// one to topology's table of names and parameters; the local and global
// policies are listed once, by policy/bucket (LocalPolicies,
// GlobalPolicies), and registered from there. TestRegistryMatchesHCL
// checks that the tables agree and that no name is in two tiers unless
// topology declares it shared (kvc).
var Registry = registry()

func registry() map[PolicyKey]Constructor {
	r := map[PolicyKey]Constructor{}
	for k, c := range pdPolicies {
		r[PolicyKey{TierPD, k}] = c
	}
	for _, n := range bucket.LocalPolicies() {
		r[PolicyKey{TierLocal, n}] = localCtor
	}
	for _, n := range bucket.GlobalPolicies() {
		r[PolicyKey{TierGlobal, n}] = globalCtor
	}
	return r
}

// pdPolicies are the P/D router policies.
var pdPolicies = map[string]Constructor{
	"kvc": {PD: func(r topology.Router, np, nd int) (RouterPolicy, error) {
		return policy.NewKVC(policy.KVCConfig{Alpha: r.Alpha, TauReject: r.TauReject, Epsilon: r.Epsilon, V1: r.V1,
			DegenerateFallback: r.AllBlacklisted == topology.AllBlacklistedDegenerate, Prefill: np, Decode: nd,
			OwnOverlap: r.OwnOverlap, LoadFloor: r.LoadFloor})
	}, SnapshotBackup: true},
	"sticky_only": {PD: func(_ topology.Router, np, nd int) (RouterPolicy, error) { return policy.NewStickyOnly(np, nd) }},
	"kv_score": {PD: func(r topology.Router, np, nd int) (RouterPolicy, error) {
		return policy.NewKVScore(policy.KVScoreConfig{Alpha: r.Alpha, Prefill: np, Decode: nd})
	}},
	"vanilla": {PD: func(_ topology.Router, np, nd int) (RouterPolicy, error) { return policy.NewVanilla(np, nd) }},
}

// policy/bucket implements every local (global) policy behind one
// constructor that checks the parameters of the named one.
var (
	localCtor  = Constructor{Local: bucket.NewLocal}
	globalCtor = Constructor{Global: bucket.NewGlobal}
)

// PolicyNames returns the registered names of tier, sorted.
func PolicyNames(t Tier) []string {
	var out []string
	for k := range Registry {
		if k.Tier == t {
			out = append(out, k.Name)
		}
	}
	sort.Strings(out)
	return out
}

func lookup(t Tier, name, what string) (Constructor, error) {
	c, ok := Registry[PolicyKey{t, name}]
	if !ok {
		return c, fmt.Errorf("%s policy %q is not runnable (registered: %v)", what, name, PolicyNames(t))
	}
	return c, nil
}

func newRouterPolicy(r topology.Router, np, nd int) (RouterPolicy, error) {
	c, err := lookup(TierPD, r.Policy, "router")
	if err != nil {
		return nil, err
	}
	return c.PD(r, np, nd)
}

func newLocalPolicy(cfg bucket.LocalConfig, n int) (bucket.Local, error) {
	c, err := lookup(TierLocal, cfg.Policy, "local router")
	if err != nil {
		return nil, err
	}
	return c.Local(cfg, n)
}

func newGlobalPolicy(cfg bucket.GlobalConfig, b []bucket.BucketConfig) (bucket.Global, error) {
	c, err := lookup(TierGlobal, cfg.Policy, "global router")
	if err != nil {
		return nil, err
	}
	return c.Global(cfg, b)
}

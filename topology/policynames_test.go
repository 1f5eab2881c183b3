package topology

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// duplicates returns the names that occur more than once.
func duplicates(names []string) []string {
	seen := map[string]int{}
	var out []string
	for _, n := range names {
		if seen[n]++; seen[n] == 2 {
			out = append(out, n)
		}
	}
	return out
}

// Every policy name is listed once per tier, and a name that is both a
// P/D and a local policy must be declared shared (sharesLocal), else the
// router block table holds it twice and this test fails: a P/D policy
// named least_loaded used to take over the fused least_loaded silently.
func TestPolicyNamesOnce(t *testing.T) {
	assert.Empty(t, duplicates(rowNames(policies)), "router block policies")
	assert.Empty(t, duplicates(LocalPolicies()), "local_router policies")
	assert.Empty(t, duplicates(GlobalPolicies()), "global_router policies")
	assert.Equal(t, []string{"kvc"}, keys(SharedPolicyNames()))

	// The collision the test exists for.
	clash := append(append([]policy(nil), disaggregatedPolicies...), policy{name: "least_loaded", kinds: disaggregated})
	saved := disaggregatedPolicies
	disaggregatedPolicies = clash
	defer func() { disaggregatedPolicies = saved }()
	assert.Equal(t, []string{"least_loaded"}, duplicates(rowNames(append(clash, singlePoolPolicies()...))))
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

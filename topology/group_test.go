package topology

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGroup(t *testing.T) {
	s := mustParse(t, meshWorkers(4, 10)+"mesh {\n  transport = \"rdma\"\n  device = \"mlx5_${link.decode_index}\"\n  bandwidth = \"200Gbps\"\n}\n", Options{})
	require.Equal(t, 10, s.Router.Epsilon, "ε = |D| by default")
	seenP, seenD := map[string]int{}, map[string]int{}
	for i := range 3 {
		g, err := s.Group(i, 3)
		require.NoError(t, err)
		require.NoError(t, checkInvariants(g), "a group is a valid spec")
		assert.Len(t, g.Links, len(g.Prefill)*len(g.Decode), "full mesh within the group")
		assert.Equal(t, len(g.Decode), g.Router.Epsilon)
		for _, w := range g.Prefill {
			seenP[w.Name]++
		}
		for _, w := range g.Decode {
			seenD[w.Name]++
		}
	}
	assert.Len(t, seenP, 4, "every prefill worker in one group")
	assert.Len(t, seenD, 10)
	for _, c := range seenD {
		assert.Equal(t, 1, c)
	}
	g, err := s.Group(2, 3)
	require.NoError(t, err)
	assert.Equal(t, []string{"d6", "d7", "d8", "d9"}, names(g.Decode))
	assert.Equal(t, 10, len(s.Decode), "the scenario itself is unchanged")

	_, err = s.Group(3, 3)
	assert.ErrorContains(t, err, "want 0 <= I < N")
	_, err = s.Group(0, 5)
	assert.ErrorContains(t, err, "4 prefill and 10 decode workers; each of 5 groups needs at least one of each")
}

func names(ws []Worker) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Name)
	}
	return out
}

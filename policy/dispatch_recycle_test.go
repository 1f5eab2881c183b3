package policy

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDispatchesRecycle: a Recycled Dispatch comes back from New emptied
// (for its new request), one with rejection Reasons is never reused (a
// Job may hold them), and New never hands out one in use twice.
func TestDispatchesRecycle(t *testing.T) {
	var p Dispatches
	r1, r2, r3 := req(1, 0, nil), req(2, 0, nil), req(3, 0, nil)
	a := p.New(r1)
	a.markTried(3)
	a.Tries = 2
	p.Recycle(a)
	b := p.New(r2)
	require.Same(t, a, b, "reused")
	require.Equal(t, &Dispatch{Req: r2}, b, "emptied")

	b.markTried(1)
	b.Tries++
	b.addReason("no-d-capacity")
	reasons := b.Reasons
	p.Recycle(b)
	c := p.New(r3)
	require.NotSame(t, b, c, "a Dispatch with Reasons is kept as it is")
	require.Equal(t, []string{"no-d-capacity"}, reasons)
	require.Equal(t, r2, b.Req)
}

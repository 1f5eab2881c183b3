package transfer_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/transfer"
)

// Load: a transfer counts whole with rate 0 in its fixed phase, then
// drains at its share; two transfers share the NIC; the NIC is empty
// once both completed.
func TestLoad(t *testing.T) {
	nic, err := transfer.NewNIC(transfer.Config{Name: "p0/x", Transport: transfer.RDMA, LineRate: 1e9, Efficiency: 1, Latency: time.Millisecond, Setup: time.Nanosecond})
	require.NoError(t, err)
	b, r := nic.Load(0)
	assert.Equal(t, int64(0), b)
	assert.Zero(t, r)

	nic.Start(0, 1, 1e6, 0)
	b, r = nic.Load(0)
	assert.Equal(t, int64(1e6), b, "fixed phase: every byte still to move")
	assert.Zero(t, r, "fixed phase: nothing moving yet")

	join, ok := nic.NextEvent()
	require.True(t, ok)
	nic.Advance(join)
	b, r = nic.Load(join)
	assert.Equal(t, int64(1e6), b)
	assert.InDelta(t, 1e9, r, 1, "alone: the whole line rate")
	b, _ = nic.Load(join + 250*time.Microsecond)
	assert.InDelta(t, 750e3, float64(b), 2, "a quarter moved after a quarter of its 1 ms")

	nic.Start(join+250*time.Microsecond, 2, 1e6, 0)
	nic.Advance(join + 250*time.Microsecond)
	for {
		at, ok := nic.NextEvent()
		if !ok {
			break
		}
		nic.Advance(at)
		b, r = nic.Load(at)
		if nic.Active() == 2 && r > 0 {
			assert.InDelta(t, 1e9, r, 1, "two transfers share the line rate")
		}
	}
	assert.Equal(t, 0, nic.Active())
	b, r = nic.Load(10 * time.Second)
	assert.Equal(t, int64(0), b)
	assert.Zero(t, r)
}

package kvevents_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/pdemu/pdemu/kvevents"
)

func sample() kvevents.Batch {
	return kvevents.Batch{TS: 1.5, Events: []kvevents.Event{
		{Kind: kvevents.BlockStored, Hashes: []uint64{1, 1 << 63}, BlockSize: 24, Medium: "GPU", TokenIDs: []int{}},
		{Kind: kvevents.BlockStored, Hashes: []uint64{3}, Parent: 1 << 63, HasParent: true, BlockSize: 24, Medium: "GPU", TokenIDs: []int{}},
		{Kind: kvevents.BlockRemoved, Hashes: []uint64{1}, Medium: "GPU"},
		{Kind: kvevents.AllBlocksCleared},
	}}
}

func TestRoundTrip(t *testing.T) {
	p, err := kvevents.Encode(sample())
	require.NoError(t, err)
	b, err := kvevents.Decode(p)
	require.NoError(t, err)
	want := sample()
	want.Events[0].TokenIDs, want.Events[1].TokenIDs = nil, nil
	assert.Equal(t, want, b)
}

// The layout is msgspec's array_like one, read by a generic decoder as a
// Python consumer would see it.
func TestLayout(t *testing.T) {
	p, err := kvevents.Encode(sample())
	require.NoError(t, err)
	var v []any
	require.NoError(t, msgpack.Unmarshal(p, &v))
	require.Len(t, v, 3)
	assert.Equal(t, 1.5, v[0])
	evs := v[1].([]any)
	require.Len(t, evs, 4)
	st := evs[0].([]any)
	assert.Equal(t, "BlockStored", st[0])
	assert.Len(t, st, 7) // tag, block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium
	assert.Nil(t, st[2])
	assert.EqualValues(t, 24, st[4])
	assert.Nil(t, st[5])
	assert.Equal(t, "GPU", st[6])
	assert.Equal(t, []any{"AllBlocksCleared"}, evs[3])
	assert.EqualValues(t, 0, v[2])
}

func TestDecodeErrors(t *testing.T) {
	for name, v := range map[string]any{
		"not an array":  map[string]int{"ts": 1},
		"unknown class": []any{1.0, []any{[]any{"BlockMoved"}}, 0},
		"bad hash":      []any{1.0, []any{[]any{"BlockRemoved", []any{"x"}, "GPU"}}, 0},
	} {
		p, err := msgpack.Marshal(v)
		require.NoError(t, err)
		_, err = kvevents.Decode(p)
		assert.Error(t, err, name)
	}
}

func TestPubSub(t *testing.T) {
	pub, err := kvevents.Listen("tcp://127.0.0.1:0", "kv@d1@pdemu")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := make(chan kvevents.Message, 16)
	errc, err := kvevents.Subscribe(ctx, pub.Endpoint(), "kv@", func(m kvevents.Message) { got <- m })
	require.NoError(t, err)
	// A PUB socket drops what it sends before the subscription arrives
	// (ZMQ's slow joiner): publish until the first batch comes through.
	idx := kvevents.NewIndex()
	first := int64(-1)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for first < 0 {
		select {
		case <-tick.C:
			require.NoError(t, pub.Publish(kvevents.Batch{TS: 0}))
		case m := <-got:
			first = m.Seq
			idx.Apply("d1", m.Seq, m.Batch)
		case <-ctx.Done():
			t.Fatal("no batch came through")
		}
	}
	require.NoError(t, pub.Publish(sample()))
	m := <-got
	for m.Seq != first+1 && len(m.Batch.Events) == 0 { // probes still queued
		first = m.Seq
		m = <-got
	}
	assert.Equal(t, "kv@d1@pdemu", m.Topic)
	idx.Apply("d1", m.Seq, m.Batch)
	assert.Empty(t, idx.Blocks("d1")) // cleared last
	assert.Zero(t, idx.Gaps())
	require.NoError(t, pub.Close(time.Second))
	cancel()
	<-errc
}

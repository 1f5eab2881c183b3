package kvevents_test

import (
	"context"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/security/null"
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

// TestCloseFlushes: every batch Publish queued before Close and Stats
// counts as sent reaches a subscriber that is connected, even when
// Close comes right after (a drained worker's last AllBlocksCleared).
// zmq4's PUB socket reported such batches sent and then dropped them
// from its own queue at close.
func TestCloseFlushes(t *testing.T) {
	for round := range 5 {
		pub, err := kvevents.Listen("tcp://127.0.0.1:0", "kv@d1@pdemu")
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		got := make(chan kvevents.Message, 1<<12)
		errc, err := kvevents.Subscribe(ctx, pub.Endpoint(), "kv@", func(m kvevents.Message) { got <- m })
		require.NoError(t, err)
		first := int64(-1)
		for first < 0 { // slow joiner: probe until one comes through
			require.NoError(t, pub.Publish(kvevents.Batch{TS: 0}))
			select {
			case m := <-got:
				first = m.Seq
			case <-time.After(20 * time.Millisecond):
			case <-ctx.Done():
				t.Fatal("no batch came through")
			}
		}
		const n = 2000
		for range n {
			require.NoError(t, pub.Publish(sample()))
		}
		require.NoError(t, pub.Close(10*time.Second))
		sent, dropped, failed := pub.Stats()
		require.Zero(t, dropped+failed, "round %d", round)
		last := sent - 1
		var m kvevents.Message
		for m.Seq < last {
			select {
			case m = <-got:
			case <-ctx.Done():
				t.Fatalf("round %d: batch %d of %d (counted sent) never arrived", round, m.Seq+1, last)
			}
		}
		cancel()
		<-errc
	}
}

// TestCloseTimeoutCounts: when Close gives up on a subscriber that
// stopped reading, what it did not write counts as failed (never as
// sent), and every published batch is counted once.
func TestCloseTimeoutCounts(t *testing.T) {
	pub, err := kvevents.Listen("tcp://127.0.0.1:0", "kv@d1@pdemu")
	require.NoError(t, err)
	c, err := net.Dial("tcp", strings.TrimPrefix(pub.Endpoint(), "tcp://"))
	require.NoError(t, err)
	defer c.Close()
	zc, err := zmq4.Open(c, null.Security(), zmq4.Sub, nil, false, nil)
	require.NoError(t, err)
	require.NoError(t, zc.SendMsg(zmq4.NewMsg([]byte("\x01kv@"))))
	// It never reads: publish large batches until the writer is stuck on
	// it (the socket buffers are full and batches queue up).
	big := kvevents.Batch{Events: []kvevents.Event{{Kind: kvevents.BlockRemoved, Hashes: make([]uint64, 1<<14), Medium: "GPU"}}}
	for i := range big.Events[0].Hashes {
		big.Events[0].Hashes[i] = 1 << 63
	}
	n := int64(0)
	for {
		require.NoError(t, pub.Publish(big))
		n++
		sent, dropped, failed := pub.Stats()
		if n-sent-dropped-failed >= 8 {
			break
		}
		require.Less(t, n, int64(2000), "the writer never stalled on the subscriber (buffers hold < 40 MiB, this is 290 MiB)")
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, pub.Close(100*time.Millisecond))
	sent, dropped, failed := pub.Stats()
	assert.Equal(t, n, sent+dropped+failed)
	assert.Positive(t, failed, "the stalled subscriber's batches are failed, not sent")
}

// flakyListener fails its first n Accepts with a transient error (as
// accept(2) does when the process is out of file descriptors).
type flakyListener struct {
	net.Listener
	n int
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.n > 0 {
		l.n--
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	return l.Listener.Accept()
}

// TestAcceptRetries: a transient Accept error does not stop the
// publisher from taking subscribers (it used to return on any error).
func TestAcceptRetries(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	pub := kvevents.PublishOn(&flakyListener{Listener: ln, n: 3}, "kv@d1@pdemu")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := make(chan kvevents.Message, 64)
	errc, err := kvevents.Subscribe(ctx, pub.Endpoint(), "kv@", func(m kvevents.Message) { got <- m })
	require.NoError(t, err, "no subscriber accepted after transient Accept errors")
	for done := false; !done; {
		require.NoError(t, pub.Publish(kvevents.Batch{TS: 0}))
		select {
		case <-got:
			done = true
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("no batch came through after transient Accept errors")
		}
	}
	require.NoError(t, pub.Close(time.Second))
	cancel()
	<-errc
}

// TestSubscribeGivesUpWithItsContext: a peer that accepts the connection
// and never speaks ZMTP does not hold Subscribe past its context.
func TestSubscribeGivesUpWithItsContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, silent
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = kvevents.Subscribe(ctx, "tcp://"+ln.Addr().String(), "", func(kvevents.Message) {})
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

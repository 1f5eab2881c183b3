package kvevents

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Kind is an event's class (its msgspec tag).
type Kind string

// Event kinds, spelt as vLLM's classes.
const (
	BlockStored      Kind = "BlockStored"
	BlockRemoved     Kind = "BlockRemoved"
	AllBlocksCleared Kind = "AllBlocksCleared"
)

// MediumGPU is vLLM's medium of a GPU-resident block.
const MediumGPU = "GPU"

// Event is one KV-cache event.
type Event struct {
	Kind      Kind
	Hashes    []uint64 // BlockStored, BlockRemoved
	Parent    uint64   // BlockStored: parent_block_hash when HasParent
	HasParent bool
	TokenIDs  []int // BlockStored
	BlockSize int   // BlockStored
	Medium    string
}

// Batch is one KVEventBatch.
type Batch struct {
	TS     float64 // seconds (pdemu: emulated seconds since the run started)
	Events []Event
	DPRank int
}

// Encode returns b in vLLM's msgpack layout.
func Encode(b Batch) ([]byte, error) {
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	try := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("kvevents: encode: %v", r)
			}
		}()
		try(e.EncodeArrayLen(3))
		try(e.EncodeFloat64(b.TS))
		try(e.EncodeArrayLen(len(b.Events)))
		for _, ev := range b.Events {
			medium := func() {
				if ev.Medium == "" {
					try(e.EncodeString(MediumGPU))
				} else {
					try(e.EncodeString(ev.Medium))
				}
			}
			hashes := func() {
				try(e.EncodeArrayLen(len(ev.Hashes)))
				for _, h := range ev.Hashes {
					try(e.EncodeUint(h))
				}
			}
			switch ev.Kind {
			case BlockStored:
				try(e.EncodeArrayLen(7))
				try(e.EncodeString(string(BlockStored)))
				hashes()
				if ev.HasParent {
					try(e.EncodeUint(ev.Parent))
				} else {
					try(e.EncodeNil())
				}
				try(e.EncodeArrayLen(len(ev.TokenIDs)))
				for _, t := range ev.TokenIDs {
					try(e.EncodeInt(int64(t)))
				}
				try(e.EncodeInt(int64(ev.BlockSize)))
				try(e.EncodeNil()) // lora_id
				medium()
			case BlockRemoved:
				try(e.EncodeArrayLen(3))
				try(e.EncodeString(string(BlockRemoved)))
				hashes()
				medium()
			case AllBlocksCleared:
				try(e.EncodeArrayLen(1))
				try(e.EncodeString(string(AllBlocksCleared)))
			default:
				return fmt.Errorf("kvevents: encode: unknown event kind %q", ev.Kind)
			}
		}
		try(e.EncodeInt(int64(b.DPRank)))
		return nil
	}()
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Decode parses a KVEventBatch payload (vLLM's or Encode's).
func Decode(p []byte) (Batch, error) {
	d := msgpack.NewDecoder(bytes.NewReader(p))
	var b Batch
	fail := func(format string, a ...any) (Batch, error) {
		return Batch{}, fmt.Errorf("kvevents: decode: "+format, a...)
	}
	n, err := d.DecodeArrayLen()
	if err != nil || n < 2 || n > 3 {
		return fail("a batch is an array [ts, events(, dp_rank)], got length %d (%v)", n, err)
	}
	if b.TS, err = d.DecodeFloat64(); err != nil {
		return fail("ts: %v", err)
	}
	ne, err := d.DecodeArrayLen()
	if err != nil || ne < 0 {
		return fail("events: %v", err)
	}
	for i := range ne {
		ev, err := decodeEvent(d)
		if err != nil {
			return fail("event %d: %v", i, err)
		}
		b.Events = append(b.Events, ev)
	}
	if n == 3 {
		if nil_, _ := isNil(d); nil_ {
			_ = d.DecodeNil()
		} else if b.DPRank, err = d.DecodeInt(); err != nil {
			return fail("data_parallel_rank: %v", err)
		}
	}
	return b, nil
}

func isNil(d *msgpack.Decoder) (bool, error) {
	c, err := d.PeekCode()
	return c == 0xc0, err
}

func decodeHashes(d *msgpack.Decoder) ([]uint64, error) {
	n, err := d.DecodeArrayLen()
	if err != nil {
		return nil, fmt.Errorf("block_hashes: %v", err)
	}
	out := make([]uint64, 0, max(n, 0))
	for range n {
		h, err := d.DecodeUint64()
		if err != nil {
			return nil, fmt.Errorf("block_hashes: %v (pdemu's hashes are unsigned 64-bit integers)", err)
		}
		out = append(out, h)
	}
	return out, nil
}

func decodeOptString(d *msgpack.Decoder) (string, error) {
	if n, _ := isNil(d); n {
		return "", d.DecodeNil()
	}
	return d.DecodeString()
}

func decodeEvent(d *msgpack.Decoder) (Event, error) {
	n, err := d.DecodeArrayLen()
	if err != nil || n < 1 {
		return Event{}, fmt.Errorf("an event is a tagged array, got length %d (%v)", n, err)
	}
	tag, err := d.DecodeString()
	if err != nil {
		return Event{}, fmt.Errorf("tag: %v", err)
	}
	ev := Event{Kind: Kind(tag)}
	switch ev.Kind {
	case BlockStored:
		if n < 6 {
			return Event{}, fmt.Errorf("BlockStored has %d fields, want at least 6", n-1)
		}
		if ev.Hashes, err = decodeHashes(d); err != nil {
			return Event{}, err
		}
		if nl, _ := isNil(d); nl {
			_ = d.DecodeNil()
		} else if ev.Parent, err = d.DecodeUint64(); err != nil {
			return Event{}, fmt.Errorf("parent_block_hash: %v", err)
		} else {
			ev.HasParent = true
		}
		nt, err := d.DecodeArrayLen()
		if err != nil {
			return Event{}, fmt.Errorf("token_ids: %v", err)
		}
		for range nt {
			t, err := d.DecodeInt()
			if err != nil {
				return Event{}, fmt.Errorf("token_ids: %v", err)
			}
			ev.TokenIDs = append(ev.TokenIDs, t)
		}
		if ev.BlockSize, err = d.DecodeInt(); err != nil {
			return Event{}, fmt.Errorf("block_size: %v", err)
		}
		if err := d.Skip(); err != nil { // lora_id
			return Event{}, fmt.Errorf("lora_id: %v", err)
		}
		rest := n - 6
		if rest > 0 {
			if ev.Medium, err = decodeOptString(d); err != nil {
				return Event{}, fmt.Errorf("medium: %v", err)
			}
			rest--
		}
		for ; rest > 0; rest-- { // newer vLLM fields (lora_name, extra_keys, ...)
			if err := d.Skip(); err != nil {
				return Event{}, err
			}
		}
	case BlockRemoved:
		if n < 2 {
			return Event{}, errors.New("BlockRemoved has no block_hashes")
		}
		if ev.Hashes, err = decodeHashes(d); err != nil {
			return Event{}, err
		}
		rest := n - 2
		if rest > 0 {
			if ev.Medium, err = decodeOptString(d); err != nil {
				return Event{}, fmt.Errorf("medium: %v", err)
			}
			rest--
		}
		for ; rest > 0; rest-- {
			if err := d.Skip(); err != nil {
				return Event{}, err
			}
		}
	case AllBlocksCleared:
		for range n - 1 {
			if err := d.Skip(); err != nil {
				return Event{}, err
			}
		}
	default:
		return Event{}, fmt.Errorf("unknown event class %q (BlockStored, BlockRemoved or AllBlocksCleared)", tag)
	}
	return ev, nil
}

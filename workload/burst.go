package workload

import (
	"fmt"
	"io"
	"sort"
	"time"
)

// BurstConfig configures NewBurst, the burst workload on which KVC v1's
// thrashing and v2's settling show (spec §3.4): Sessions sessions start
// within a few hundred milliseconds (a burst that saturates the decode
// workers), all but LongSessions end after ShortTurns turns, and the long
// ones go on for LongTurns turns in a cluster that now has room for them.
// Prompts start at SystemTokens (shared) + FirstTokens and grow by
// StepTokens + OutputTokens per turn; turns are Gap apart in open loop
// and Think after the previous answer in closed loop. Zero fields take
// the defaults in brackets (actors/burst_test.go runs them).
type BurstConfig struct {
	Sessions     int           // [24]
	LongSessions int           // [6]
	ShortTurns   int           // [6]
	LongTurns    int           // [30]
	SystemTokens int           // [4000]
	FirstTokens  int           // [4000]
	StepTokens   int           // append per turn [900]
	OutputTokens int           // [100]
	Gap          time.Duration // [3 s]
	Think        time.Duration // [1 s]
	BlockTokens  int           // [24]
}

func (c *BurstConfig) defaults() {
	orDefault(&c.Sessions, 24)
	orDefault(&c.LongSessions, 6)
	orDefault(&c.ShortTurns, 6)
	orDefault(&c.LongTurns, 30)
	orDefault(&c.SystemTokens, 4000)
	orDefault(&c.FirstTokens, 4000)
	orDefault(&c.StepTokens, 900)
	orDefault(&c.OutputTokens, 100)
	orDefault(&c.BlockTokens, 24)
	orDefault(&c.Gap, 3*time.Second)
	orDefault(&c.Think, time.Second)
}

type burstSrc struct {
	reqs []*Request
	next int
}

// NewBurst returns the burst workload (deterministic: it draws nothing at
// random, so it takes no seed).
func NewBurst(c BurstConfig) (Source, error) {
	c.defaults()
	if c.Sessions < 1 || c.LongSessions < 0 || c.LongSessions > c.Sessions || c.ShortTurns < 1 || c.LongTurns < 1 ||
		c.SystemTokens < 0 || c.FirstTokens < 1 || c.StepTokens < 1 || c.OutputTokens < 1 || c.BlockTokens < 1 || c.Gap < 0 || c.Think < 0 {
		return nil, fmt.Errorf("workload: burst config out of range: %+v", c)
	}
	var all []*Request
	for s := 0; s < c.Sessions; s++ {
		turns := c.ShortTurns
		if s < c.LongSessions {
			turns = c.LongTurns
		}
		in, at := c.SystemTokens+c.FirstTokens, time.Duration(s)*10*time.Millisecond
		for t := 0; t < turns; t++ {
			if t > 0 {
				in += c.OutputTokens + c.StepTokens
				at += c.Gap
			}
			blocks := make([]uint64, in/c.BlockTokens)
			for i := range blocks {
				if i < c.SystemTokens/c.BlockTokens {
					blocks[i] = uint64(i + 1)
				} else {
					blocks[i] = uint64(s+1)<<32 | uint64(i+1)
				}
			}
			r := &Request{Session: int32(s), SessionName: fmt.Sprintf("burst%02d", s), Turn: t,
				Arrival: at, InputLen: in, OutputLen: c.OutputTokens, Blocks: blocks, BlockTokens: c.BlockTokens,
				AppendLen: c.StepTokens, Last: t == turns-1}
			if t > 0 {
				r.Think = c.Think
			} else {
				r.AppendLen = in
			}
			all = append(all, r)
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Arrival < all[j].Arrival })
	for i, r := range all {
		r.ID = int64(i)
	}
	return &burstSrc{reqs: all}, nil
}

func (b *burstSrc) Next() (*Request, error) {
	if b.next == len(b.reqs) {
		return nil, io.EOF
	}
	b.next++
	return b.reqs[b.next-1], nil
}

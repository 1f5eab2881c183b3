package workload

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/pdemu/pdemu/internal/splitmix"
)

// ccParser turns one session document into compact chains.
type ccParser struct {
	file    string
	bt      int
	skipBad bool
	salt    uint64
	out     []*ccChain
	end     time.Duration
	skipped int
	subs    int
	// zeroOutputs counts requests with 0 output tokens (see outputField).
	zeroOutputs int
	sc          *ccScanner // the fast decoder; nil: encoding/json only
}

type ccRaw struct {
	at, think, api time.Duration
	hasThink       bool
	in, out        int
	ids            []uint64
}

// decodeReqs decodes requests one by one; errs[k] is request k's error.
// sc is the fast decoder (nil: encoding/json only).
func decodeReqs(sc *ccScanner, raws []json.RawMessage) ([]ccReqJSON, []error) {
	reqs := make([]ccReqJSON, len(raws))
	errs := make([]error, len(raws))
	for k, raw := range raws {
		errs[k] = decodeReq(sc, raw, &reqs[k])
	}
	return reqs, errs
}

// chain parses the requests of one agent (starting at offset from the
// session start) into a chain, recursing into subagents. errs, when not
// nil, holds each request's decoding error.
func (p *ccParser) chain(name, path string, reqs []ccReqJSON, errs []error, offset time.Duration, tool, sys int, share bool) error {
	ch := &ccChain{name: name, sess: -1, start: offset, bt: p.bt, salt: p.salt}
	var prev *ccRaw
	var prevIDs []uint64
	type sub struct {
		name, path string
		reqs       []json.RawMessage
		at         time.Duration
		tool, sys  int
	}
	var subs []sub
	for k := range reqs {
		j := &reqs[k]
		var err error
		if errs != nil {
			err = errs[k]
		}
		isSub := err == nil && (j.Type != nil && *j.Type == "subagent" || j.Requests != nil)
		var r ccRaw
		if err == nil && isSub {
			s := sub{path: path + "[" + strconv.Itoa(k) + "].requests", reqs: j.Requests, tool: tool, sys: sys}
			err = p.subagent(j, &s.at, &s.tool, &s.sys)
			p.subs++
			s.name = name + "/sub" + strconv.Itoa(p.subs)
			if j.AgentID != nil && *j.AgentID != "" {
				s.name = name + "/" + *j.AgentID
			}
			if err == nil {
				subs = append(subs, s)
				continue
			}
		} else if err == nil {
			r, err = p.request(j, prev)
		}
		if err != nil {
			if p.skipBad {
				p.skipped++
				continue
			}
			return locate(p.file, 0, path+"["+strconv.Itoa(k)+"]", err)
		}
		lcp := 0
		for lcp < len(prevIDs) && lcp < len(r.ids) && prevIDs[lcp] == r.ids[lcp] {
			lcp++
		}
		tail := append([]uint64(nil), r.ids[lcp:]...) // copy: do not pin the decoded array
		ch.reqs = append(ch.reqs, ccCompact{at: r.at, in: r.in, out: r.out, think: r.think, lcp: lcp, tail: tail})
		if share && len(ch.reqs) == 1 {
			k := min(len(r.ids), (tool+sys+p.bt-1)/p.bt)
			ch.canon = append([]uint64(nil), r.ids[:k]...)
			ch.toolBlk = tool / p.bt
			ch.toolKey = splitmix.Mix64(uint64(tool)*0xc2b2ae3d27d4eb4f ^ 0x165667b19e3779f9)
			ch.sysKey = splitmix.Mix64(ch.toolKey ^ uint64(sys)*0x27d4eb2f165667c5)
		}
		p.end = max(p.end, satAdd(satAdd(offset, r.at), r.api))
		rr := r
		prev, prevIDs = &rr, r.ids
	}
	if len(ch.reqs) > 0 {
		p.out = append(p.out, ch)
	}
	for _, s := range subs {
		reqs, errs := decodeReqs(p.sc, s.reqs)
		if err := p.chain(s.name, s.path, reqs, errs, satAdd(offset, s.at), s.tool, s.sys, share); err != nil {
			return err
		}
	}
	return nil
}

func (p *ccParser) subagent(j *ccReqJSON, at *time.Duration, tool, sys *int) error {
	if j.T == nil {
		return badField("t", "missing")
	}
	if *j.T < 0 {
		return badField("t", "%v must be >= 0", *j.T)
	}
	var err error
	if *at, err = durField("t", *j.T, time.Second); err != nil {
		return err
	}
	if j.ToolTokens != nil {
		if *tool, err = intField("tool_tokens", j.ToolTokens, 0); err != nil {
			return err
		}
	}
	if j.SystemTokens != nil {
		if *sys, err = intField("system_tokens", j.SystemTokens, 0); err != nil {
			return err
		}
	}
	return nil
}

func (p *ccParser) request(j *ccReqJSON, prev *ccRaw) (ccRaw, error) {
	var r ccRaw
	var err error
	if j.T == nil {
		return r, badField("t", "missing")
	}
	if *j.T < 0 {
		return r, badField("t", "%v must be >= 0", *j.T)
	}
	if r.at, err = durField("t", *j.T, time.Second); err != nil {
		return r, err
	}
	if prev != nil && r.at < prev.at {
		return r, badField("t", "%v s is before the previous request (%v s)", *j.T, prev.at.Seconds())
	}
	if r.in, err = intField("in", j.In, 0); err != nil {
		return r, err
	}
	if r.out, err = outputField("out", j.Out, &p.zeroOutputs); err != nil {
		return r, err
	}
	if r.ids, err = requiredHashIDs(j.HashIDs, r.in, p.bt); err != nil {
		return r, err
	}
	if j.API != nil {
		if *j.API < 0 {
			return r, badField("api_time", "%v must be >= 0", *j.API)
		}
		if r.api, err = durField("api_time", *j.API, time.Second); err != nil {
			return r, err
		}
	}
	if j.Think != nil {
		if *j.Think < 0 {
			return r, badField("think_time", "%v must be >= 0", *j.Think)
		}
		if r.think, err = durField("think_time", *j.Think, time.Second); err != nil {
			return r, err
		}
	} else if prev != nil {
		r.think = max(0, r.at-prev.at-prev.api)
	}
	if prev == nil {
		r.think = 0
	}
	return r, nil
}

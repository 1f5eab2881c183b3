package topology

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
)

// SLO is a run's service-level objective, in the manner of DistServe's
// and Vidur's SLO attainment: a request meets it when it completed and
// its TTFT, TPOT (time per output token after the first, the mean
// inter-token latency) and end-to-end latency are each at most the
// threshold (0 = that one is not checked); the run meets the SLO when at
// least Attainment of its requests do (0.9: DistServe's 90 %). Goodput is
// the requests per second that meet it.
type SLO struct {
	TTFT, TPOT, E2E time.Duration
	Attainment      float64
}

// SLO defaults (docs/MODEL.md, "SLOs and goodput").
const (
	// DefaultSLOTTFT: 10 s. An agentic request carries a long prompt
	// (the Claude Code sessions: p50 111K tokens): a cold 100K-token
	// prefill alone takes seconds on one H200, so an interactive chat's
	// sub-second TTFT would fail every cold turn, while a turn waiting
	// longer than 10 s stalls the agent loop.
	DefaultSLOTTFT = 10 * time.Second
	// DefaultSLOTPOT: 100 ms per output token, DistServe's chatbot TPOT
	// SLO (and faster than a person reads).
	DefaultSLOTPOT = 100 * time.Millisecond
	// DefaultSLOAttainment: 90 % of requests, DistServe's target.
	DefaultSLOAttainment = 0.9
)

// DefaultSLO is the SLO of a scenario without an slo block: TTFT 10 s,
// TPOT 100 ms, E2E unchecked, 90 % attainment.
func DefaultSLO() SLO {
	return SLO{TTFT: DefaultSLOTTFT, TPOT: DefaultSLOTPOT, Attainment: DefaultSLOAttainment}
}

// String is the SLO as --slo takes it.
func (s SLO) String() string {
	d := func(x time.Duration) string {
		if x == 0 {
			return "0"
		}
		return x.String()
	}
	return fmt.Sprintf("ttft=%s,tpot=%s,e2e=%s,attainment=%g", d(s.TTFT), d(s.TPOT), d(s.E2E), s.Attainment)
}

type sloHCL struct {
	DefRange        hcl.Range `hcl:",def_range"`
	TTFT            *string   `hcl:"ttft,optional"`
	TTFTRange       hcl.Range `hcl:"ttft,attr_range"`
	TPOT            *string   `hcl:"tpot,optional"`
	TPOTRange       hcl.Range `hcl:"tpot,attr_range"`
	E2E             *string   `hcl:"e2e,optional"`
	E2ERange        hcl.Range `hcl:"e2e,attr_range"`
	Attainment      *float64  `hcl:"attainment,optional"`
	AttainmentRange hcl.Range `hcl:"attainment,attr_range"`
}

// slo checks the slo block (at most one); absent attributes keep the
// defaults.
func (c *checker) slo(shs []sloHCL) SLO {
	s := DefaultSLO()
	sh := firstOf(c, "slo", shs, func(b *sloHCL) hcl.Range { return b.DefRange }, "")
	if sh == nil {
		return s
	}
	s.TTFT = c.checkDuration(sh.TTFT, sh.TTFTRange, s.TTFT, 0, "ttft", "largest time to first token that meets the SLO; \"0s\" = not checked")
	s.TPOT = c.checkDuration(sh.TPOT, sh.TPOTRange, s.TPOT, 0, "tpot", "largest time per output token after the first; \"0s\" = not checked")
	s.E2E = c.checkDuration(sh.E2E, sh.E2ERange, s.E2E, 0, "e2e", "largest end-to-end latency; \"0s\" = not checked")
	s.Attainment = checkNum(c, sh.Attainment, sh.AttainmentRange, s.Attainment, "attainment",
		"share of requests that must meet the SLO", unitInterval)
	return s
}

// ParseSLO applies an --slo value ("ttft=5s,tpot=50ms,e2e=0,attainment=0.95";
// any subset, "0" turns a threshold off) to s.
func ParseSLO(s SLO, v string) (SLO, error) {
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return s, fmt.Errorf("--slo %q: want KEY=VALUE[,KEY=VALUE...] with keys ttft, tpot, e2e, attainment", v)
		}
		switch k {
		case "ttft", "tpot", "e2e":
			d := time.Duration(0)
			if val != "0" {
				var err error
				if d, err = time.ParseDuration(val); err != nil || d < 0 {
					return s, fmt.Errorf("--slo %s=%s: want a duration >= 0 such as 5s or 100ms (0 = not checked)", k, val)
				}
			}
			switch k {
			case "ttft":
				s.TTFT = d
			case "tpot":
				s.TPOT = d
			default:
				s.E2E = d
			}
		case "attainment":
			f, err := strconv.ParseFloat(val, 64)
			if err != nil || !(f > 0 && f <= 1) {
				return s, fmt.Errorf("--slo attainment=%s: want a share in (0, 1], e.g. 0.9", val)
			}
			s.Attainment = f
		default:
			return s, fmt.Errorf("--slo: unknown key %q%s (keys: ttft, tpot, e2e, attainment)", k, didYouMean(k, []string{"ttft", "tpot", "e2e", "attainment"}))
		}
	}
	return s, nil
}

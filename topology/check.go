package topology

import (
	"cmp"
	"fmt"
	"math"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// checker accumulates diagnostics while turning decoded HCL into a Spec.
type checker struct {
	opts  Options
	diags hcl.Diagnostics
	// failed holds the subjects of decoding errors. A semantic diagnostic
	// whose range overlaps one is dropped: the value it would complain
	// about was never decoded, and HCL already said why.
	failed []hcl.Range
	// bodies maps a block body's opening brace to its whole range (see
	// bodyRange).
	bodies map[hcl.Range]hcl.Range
}

// decoded records diagnostics from HCL decoding and reports whether they
// are free of errors.
func (c *checker) decoded(diags hcl.Diagnostics) bool {
	for _, d := range diags {
		if d.Severity == hcl.DiagError && d.Subject != nil {
			c.failed = append(c.failed, *d.Subject)
		}
	}
	c.diags = append(c.diags, diags...)
	return !diags.HasErrors()
}

func overlaps(a, b hcl.Range) bool {
	return a.Filename == b.Filename && a.Start.Byte <= b.End.Byte && b.Start.Byte <= a.End.Byte
}

// errorf adds an error diagnostic at subject.
// firstOf returns the first of a file's blocks of one kind, one a
// scenario has at most one of (nil when there is none), and reports every
// later one as a duplicate of it, more ("" or a sentence with its leading
// space) closing the detail. def returns a block's DefRange.
func firstOf[B any](c *checker, kind string, blocks []B, def func(*B) hcl.Range, more string) *B {
	if len(blocks) == 0 {
		return nil
	}
	for i := 1; i < len(blocks); i++ {
		c.errorf(def(&blocks[i]), "Duplicate "+kind+" block",
			"Only one %s block is allowed; another was declared at %s.%s", kind, def(&blocks[0]), more)
	}
	return &blocks[0]
}

func (c *checker) errorf(subject hcl.Range, summary, format string, args ...any) {
	if subject != (hcl.Range{}) {
		for _, f := range c.failed {
			if overlaps(f, subject) {
				return
			}
		}
	}
	d := &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   fmt.Sprintf(format, args...),
	}
	if subject != (hcl.Range{}) {
		d.Subject = subject.Ptr()
	}
	c.diags = append(c.diags, d)
}

// Checks for checkNum: each returns "" when v is fine, else what is wrong.

func atLeast[T cmp.Ordered](lo T) func(T) string {
	return func(v T) string {
		if v < lo {
			return fmt.Sprintf("must be at least %v", lo)
		}
		return ""
	}
}

func positive[T int | float64](v T) string {
	if v <= 0 {
		return "must be greater than 0"
	}
	return ""
}

func unitInterval(v float64) string {
	if v <= 0 || v > 1 {
		return "must be in (0, 1], i.e. greater than 0 and at most 1"
	}
	return ""
}

func unitIntervalClosed(v float64) string {
	if !(v >= 0 && v <= 1) {
		return "must be in [0, 1]"
	}
	return ""
}

// checkNum validates an optional number: nil gives def, an invalid value a
// diagnostic at rng (and def).
func checkNum[T int | uint64 | float64](c *checker, p *T, rng hcl.Range, def T, name, help string, check func(T) string) T {
	if p == nil {
		return def
	}
	v := *p
	if f, ok := any(v).(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
		c.errorf(rng, fmt.Sprintf("Invalid value for %q", name), "%s must be a finite number.", describe(name, help))
		return def
	}
	if check != nil {
		if problem := check(v); problem != "" {
			c.errorf(rng, fmt.Sprintf("Invalid value for %q", name), "%s %s; got %v.", describe(name, help), problem, v)
			return def
		}
	}
	return v
}

func describe(name, help string) string {
	if help == "" {
		return fmt.Sprintf("%q", name)
	}
	return fmt.Sprintf("%q (%s)", name, help)
}

// checkBandwidth parses an optional bandwidth attribute (ParseBandwidth);
// ok reports a valid value. Absent, or invalid (reported), it returns def.
func (c *checker) checkBandwidth(p *string, rng hcl.Range, def float64, name, help string) (bw float64, ok bool) {
	if p == nil {
		return def, false
	}
	bw, err := ParseBandwidth(*p)
	if err != nil {
		c.errorf(rng, fmt.Sprintf("Invalid bandwidth for %q", name), "%s: %s.", describe(name, help), err)
		return def, false
	}
	return bw, true
}

// checkDuration parses an optional duration attribute; min is the smallest
// accepted value.
func (c *checker) checkDuration(p *string, rng hcl.Range, def, minimum time.Duration, name, help string) time.Duration {
	d, _ := c.checkDurationOK(p, rng, def, minimum, name, help)
	return d
}

// checkDurationOK is checkDuration that also reports whether the value was
// valid (or absent).
func (c *checker) checkDurationOK(p *string, rng hcl.Range, def, minimum time.Duration, name, help string) (time.Duration, bool) {
	if p == nil {
		return def, !c.bad(rng)
	}
	d, err := parseDuration(*p)
	if err != nil {
		c.errorf(rng, fmt.Sprintf("Invalid duration for %q", name), "%s: %s.", describe(name, help), err)
		return def, false
	}
	if d < minimum {
		c.errorf(rng, fmt.Sprintf("Invalid duration for %q", name), "%s must be at least %s; got %s.", describe(name, help), minimum, d)
		return def, false
	}
	if hi := maxDuration(name); d > hi {
		c.errorf(rng, fmt.Sprintf("Implausible duration for %q", name), "%s must be at most %s; got %s.", describe(name, help), hi, d)
		return def, false
	}
	return d, true
}

// Duration bounds (docs/MODEL.md, "Input bounds"): per-operation costs
// (a link's latency, a forward pass's overhead) are at most
// MaxOverhead, think times and session gaps at most MaxThinkTime, the
// sampling interval at most MaxSampleInterval, and anything else (a fault's
// time, a meta-store TTL) at most MaxDuration.
const (
	MaxOverhead       = 10 * time.Second
	MaxThinkTime      = 24 * time.Hour
	MaxSampleInterval = time.Hour
	MaxDuration       = 365 * 24 * time.Hour
)

func maxDuration(name string) time.Duration {
	switch name {
	case "latency", "setup", "step_overhead", "prefill_overhead", "allreduce_latency", "probe_latency":
		return MaxOverhead
	case "think_time", "session_stagger":
		return MaxThinkTime
	case "sample_interval":
		return MaxSampleInterval
	}
	return MaxDuration
}

// between is a checkNum check for a closed range: the bound is the
// documented plausible range of the attribute.
func between[T cmp.Ordered](lo, hi T) func(T) string {
	return func(v T) string {
		if v < lo || v > hi {
			return fmt.Sprintf("must be between %v and %v", lo, hi)
		}
		return ""
	}
}

// optDuration parses an optional duration override (>= 0): nil when absent
// or invalid.
func (c *checker) optDuration(p *string, rng hcl.Range, name, help string) *time.Duration {
	if p == nil {
		return nil
	}
	d, ok := c.checkDurationOK(p, rng, 0, 0, name, help)
	if !ok {
		return nil
	}
	return &d
}

// optFraction validates an optional fraction override in (0, 1]: nil when
// absent or invalid.
func (c *checker) optFraction(p *float64, rng hcl.Range, name, help string) *float64 {
	if p == nil {
		return nil
	}
	before := len(c.diags)
	v := checkNum(c, p, rng, 0, name, help, unitInterval)
	if len(c.diags) != before || v == 0 {
		return nil
	}
	return &v
}

// optSize parses an optional memory size override (bytes, >= 0): nil when
// absent or invalid.
func (c *checker) optSize(p *string, rng hcl.Range, name, help string) *float64 {
	if p == nil {
		return nil
	}
	v, err := ParseSize(*p)
	if err != nil {
		c.errorf(rng, fmt.Sprintf("Invalid size for %q", name), "%s: %s.", describe(name, help), err)
		return nil
	}
	return &v
}

// bad reports whether an attribute at rng failed to decode (HCL already
// reported it, and its value was not stored).
func (c *checker) bad(rng hcl.Range) bool {
	if rng == (hcl.Range{}) {
		return false
	}
	for _, f := range c.failed {
		if overlaps(f, rng) {
			return true
		}
	}
	return false
}

// checkEnum validates an optional string against a fixed set.
func (c *checker) checkEnum(p *string, rng hcl.Range, def, name string, allowed ...string) string {
	if p == nil {
		return def
	}
	for _, a := range allowed {
		if *p == a {
			return a
		}
	}
	c.errorf(rng, fmt.Sprintf("Invalid value for %q", name), "%q must be %s; got %q.%s",
		name, quotedOr(allowed), *p, didYouMean(*p, allowed))
	return def
}

// checkPreset validates a gpu/model preset name.
func (c *checker) checkPreset(v string, rng hcl.Range, what, attr string, known func(string) bool, names []string) {
	switch {
	case rng == (hcl.Range{}):
		// Absent: gohcl already reported the missing required argument.
	case v == "":
		c.errorf(rng, fmt.Sprintf("Empty %s preset", what), "%q must name a %s preset.", attr, what)
	case known != nil && !known(v):
		extra := didYouMean(v, names)
		if extra == "" && len(names) > 0 && len(names) <= 24 {
			extra = " Known presets: " + quotedList(names) + "."
		}
		c.errorf(rng, fmt.Sprintf("Unknown %s preset", what), "There is no %s preset named %q.%s", what, v, extra)
	}
}

// bodyRange is the source range of a block body (braces included), or the
// zero range when it is not known. Decoded bodies are wrapped (dynamic
// blocks, --set), so the range is looked up by the body's missing-item
// range, its opening brace, in the ranges recorded by recordBodies.
func (c *checker) bodyRange(b hcl.Body) hcl.Range {
	if b == nil {
		return hcl.Range{}
	}
	return c.bodies[b.MissingItemRange()]
}

// recordBodies records the source range of every body under b.
func (c *checker) recordBodies(b *hclsyntax.Body) {
	if c.bodies == nil {
		c.bodies = map[hcl.Range]hcl.Range{}
	}
	c.bodies[b.MissingItemRange()] = b.SrcRange
	for _, blk := range b.Blocks {
		c.recordBodies(blk.Body)
	}
}

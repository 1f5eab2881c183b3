package topology

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests of the cost-model overrides of workers (mfu, mbu, ...), the
// transport overrides of links (efficiency, max_rate, setup) and link
// faults.

// inDecode adds attribute lines to decode "d0" of minimal.
func inDecode(lines string) string {
	return replace(minimal, `decode "d0" {`, "decode \"d0\" {\n"+lines)
}

// inPrefill adds attribute lines to prefill "p0" of minimal.
func inPrefill(lines string) string {
	return replace(minimal, `prefill "p0" {`, "prefill \"p0\" {\n"+lines)
}

// inLink adds lines to link "p0" "d0" of minimal.
func inLink(lines string) string {
	return replace(minimal, `bandwidth = "200Gbps"`, "bandwidth = \"200Gbps\"\n"+lines)
}

// twoLinksOneNIC is p0 → d0 and p0 → d1 over the same device mlx5_0; extra0
// and extra1 are added to the first and second link.
func twoLinksOneNIC(extra0, extra1 string) string {
	l0 := replace(l00, `bandwidth = "200Gbps"`, "bandwidth = \"200Gbps\"\n"+extra0)
	l1 := replace(replace(l01, `"mlx5_1"`, `"mlx5_0"`), `bandwidth = "200Gbps"`, "bandwidth = \"200Gbps\"\n"+extra1)
	return p0 + d0 + d1 + l0 + l1 + kvc
}

// TestOverrideDiagnostics has one case per diagnostic of the new
// attributes, in the style of TestDiagnostics: the marked line must be the
// one reported, and every phrase must appear.
func TestOverrideDiagnostics(t *testing.T) {
	cases := []struct {
		name    string
		src     string
		phrases []string
	}{
		// Worker cost-model overrides.
		{"mfu zero", inDecode("  mfu = 0 #!"), []string{`Invalid value for "mfu"`, "(0, 1]", "got 0"}},
		{"mfu above one", inPrefill("  mfu = 1.5 #!"), []string{`Invalid value for "mfu"`, "got 1.5"}},
		{"mfu not a number", inDecode("  mfu = \"high\" #!"), []string{"Unsuitable value type", "a number is required"}},
		{"mfu out of range literal", inDecode("  mfu = 1e400 #!"), []string{"Number out of range"}},
		{"mbu negative", inDecode("  mbu = -0.6 #!"), []string{`Invalid value for "mbu"`, "HBM bandwidth", "got -0.6"}},
		{"comm_efficiency above one", inPrefill("  comm_efficiency = 2 #!"), []string{`Invalid value for "comm_efficiency"`, "all-reduces"}},
		{"comm_efficiency infinite", inPrefill("  comm_efficiency = 1e300 * 1e300 #!"), []string{"Unsuitable value type", "out of range"}},
		{"step_overhead without unit", inDecode("  step_overhead = \"5\" #!"), []string{`Invalid duration for "step_overhead"`, "Go duration syntax"}},
		{"step_overhead negative", inDecode("  step_overhead = \"-1ms\" #!"), []string{`Invalid duration for "step_overhead"`, "must not be negative"}},
		{"prefill_overhead garbage", inPrefill("  prefill_overhead = \"soon\" #!"), []string{`Invalid duration for "prefill_overhead"`}},
		{"allreduce_latency negative", inDecode("  allreduce_latency = \"-18us\" #!"), []string{`Invalid duration for "allreduce_latency"`, "negative"}},
		{"allreduce_latency misspelt", inDecode("  all_reduce_latency = \"18us\" #!"), []string{"Unsupported argument", `Did you mean "allreduce_latency"?`}},
		{"reserved_memory bits", inDecode("  reserved_memory = \"1.1Gib\" #!"), []string{`Invalid size for "reserved_memory"`, `unknown unit "Gib"`, "upper-case B"}},
		{"reserved_memory unknown unit", inPrefill("  reserved_memory = \"1.1 GiBs\" #!"), []string{`Invalid size for "reserved_memory"`, `unknown unit "GiBs"`}},
		{"reserved_memory negative string", inDecode("  reserved_memory = \"-1GiB\" #!"), []string{`Invalid size for "reserved_memory"`, "must not be negative"}},
		{"reserved_memory negative number", inDecode("  reserved_memory = -5 #!"), []string{`Invalid size for "reserved_memory"`, "must not be negative"}},
		{"reserved_memory not a size", inDecode("  reserved_memory = \"lots\" #!"), []string{`Invalid size for "reserved_memory"`, "does not start with a number"}},
		{"reserved_memory bool", inDecode("  reserved_memory = true #!"), []string{`Invalid size for "reserved_memory"`}},

		// Link transport overrides.
		{"efficiency zero", inLink("  efficiency = 0 #!"), []string{`Invalid value for "efficiency"`, "(0, 1]"}},
		{"efficiency above one", inLink("  efficiency = 1.01 #!"), []string{`Invalid value for "efficiency"`, "got 1.01"}},
		{"efficiency not a number", inLink("  efficiency = \"most\" #!"), []string{"Unsuitable value type"}},
		{"max_rate garbage", inLink("  max_rate = \"fast\" #!"), []string{`Invalid bandwidth for "max_rate"`, "does not start with a number"}},
		{"max_rate zero", inLink("  max_rate = \"0GB/s\" #!"), []string{`Invalid bandwidth for "max_rate"`, "positive"}},
		{"max_rate unit", inLink("  max_rate = \"1.5GB\" #!"), []string{`Invalid bandwidth for "max_rate"`, `unknown unit "GB"`}},
		{"setup without unit", inLink("  setup = \"400\" #!"), []string{`Invalid duration for "setup"`, "Go duration syntax"}},
		{"setup negative", inLink("  setup = \"-1ms\" #!"), []string{`Invalid duration for "setup"`, "negative"}},
		{"max_rate misspelt", inLink("  maxrate = \"1GB/s\" #!"), []string{"Unsupported argument", `Did you mean "max_rate"?`}},

		// NIC consistency: links over one device describe one NIC.
		{"inconsistent nic efficiency", twoLinksOneNIC("  efficiency = 0.5", "  efficiency = 0.6 #!"), []string{"Inconsistent NIC efficiency", `device "mlx5_0"`, "efficiency 0.5 and this one 0.6"}},
		{"nic efficiency set once", replace(twoLinksOneNIC("  efficiency = 0.5", ""), `link "p0" "d1" {`, `link "p0" "d1" { #!`), []string{"Inconsistent NIC efficiency", "0.5 and this one the transport default", `same "efficiency"`}},
		{"inconsistent nic max_rate", twoLinksOneNIC("  max_rate = \"1.5GB/s\"", "  max_rate = \"2GB/s\" #!"), []string{"Inconsistent NIC rate ceiling", `"1.5GB/s" (1.5e+09 bytes/s) and this one "2GB/s"`}},
		{"inconsistent nic setup", twoLinksOneNIC("", "  setup = \"0s\" #!"), []string{"Inconsistent NIC setup cost", "the transport default and this one 0s"}},
		{"inconsistent nic latency", twoLinksOneNIC("  latency = \"50us\"", "  latency = \"20us\" #!"), []string{"Inconsistent NIC latency", "50µs and this one 20µs"}},
		{"inconsistent nic latency default", replace(twoLinksOneNIC("  latency = \"50us\"", ""), `link "p0" "d1" {`, `link "p0" "d1" { #!`), []string{"Inconsistent NIC latency", "50µs and this one 10µs (the default)"}},

		// Faults.
		{"empty fault", inLink("  fault { #!\n    at = \"1s\"\n  }"), []string{"Empty fault block", "exactly one of degrade"}},
		{"fault with null kind", inLink("  fault { #!\n    at = \"1s\"\n    cut = null\n  }"), []string{"Empty fault block"}},
		{"two fault kinds", inLink("  fault {\n    at = \"1s\"\n    degrade = 0.5\n    cut = true #!\n  }"), []string{"Conflicting fault kinds", `both "degrade" and "cut"`, "Split it into two fault blocks"}},
		{"two fault kinds reversed", inLink("  fault {\n    at = \"1s\"\n    restore = true\n    cut = true #!\n  }"), []string{"Conflicting fault kinds", `both "restore" and "cut"`}},
		{"degrade zero", inLink("  fault {\n    at = \"1s\"\n    degrade = 0 #!\n  }"), []string{`Invalid value for "degrade"`, "(0, 1]"}},
		{"degrade above one", inLink("  fault {\n    at = \"1s\"\n    degrade = 2 #!\n  }"), []string{`Invalid value for "degrade"`, "got 2"}},
		{"degrade not a number", inLink("  fault {\n    at = \"1s\"\n    degrade = \"half\" #!\n  }"), []string{"Unsuitable value type"}},
		{"cut false", inLink("  fault {\n    at = \"1s\"\n    cut = false #!\n  }"), []string{`Invalid value for "cut"`, "must be true"}},
		{"restore false", inLink("  fault {\n    at = \"1s\"\n    restore = false #!\n  }"), []string{`Invalid value for "restore"`, "must be true"}},
		{"cut not a bool", inLink("  fault {\n    at = \"1s\"\n    cut = \"yes\" #!\n  }"), []string{"Unsuitable value type", "bool"}},
		{"fault without at", inLink("  fault { #!\n    cut = true\n  }"), []string{"Missing required argument", `"at" is required`}},
		{"fault at negative", inLink("  fault {\n    at = \"-1s\" #!\n    cut = true\n  }"), []string{`Invalid duration for "at"`, "must not be negative"}},
		{"fault at unitless", inLink("  fault {\n    at = 30 #!\n    cut = true\n  }"), []string{`Invalid duration for "at"`, "Go duration syntax"}},
		{"fault misspelt attribute", inLink("  fault {\n    at = \"1s\"\n    degrad = 0.5 #!\n  }"), []string{"Unsupported argument", `Did you mean "degrade"?`}},
		{"fault with label", inLink("  fault \"x\" { #!\n    at = \"1s\"\n    cut = true\n  }"), []string{"Extraneous label"}},
		{"fault at top level", minimal + "fault { #!\n  at = \"1s\"\n  cut = true\n}\n", []string{"Unsupported block type"}},
		{"second fault invalid", inLink("  fault {\n    at = \"1s\"\n    cut = true\n  }\n  fault {\n    at = \"2s\"\n    restore = false #!\n  }"), []string{`Invalid value for "restore"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msg := checkMarkedDiag(t, tc.src, Options{}, tc.phrases)
			assert.Equal(t, 1, strings.Count(msg, ": Error: "), "no cascading diagnostics:\n%s", msg)
		})
	}
}

// Fused blocks take the overrides too (no policy runs fused workers yet, so
// the block also draws "not used by the router policy").
func TestFusedOverrideDiagnostic(t *testing.T) {
	src := minimal + "fused \"w0\" {\n  gpu = \"H200-SXM\"\n  model = \"m\"\n  mbu = 0 #!\n}\n"
	msg := parseErr(t, src, Options{})
	assert.Contains(t, msg, "test.hcl:"+strconv.Itoa(markedLine(t, src))+":3: Error: Invalid value for \"mbu\"")
	assert.Contains(t, msg, "Worker not used by the router policy")
}

// Two transports over one device (the existing check compared only
// bandwidth; a second transport was silently ignored).
func TestInconsistentNICTransport(t *testing.T) {
	src := p0 + d0 + d1 + l00 + replace(replace(l01, `"mlx5_1"`, `"mlx5_0"`), `transport = "rdma"`, `transport = "tcp" #!`) + kvc
	msg := parseErr(t, src, Options{})
	assert.Contains(t, msg, "test.hcl:"+strconv.Itoa(markedLine(t, src))+":")
	assert.Contains(t, flat(msg), `Inconsistent NIC transport`)
	assert.Contains(t, flat(msg), `transport "rdma" and this one "tcp"`)
}

// An invalid value on one link does not also produce an "Inconsistent NIC"
// diagnostic against the other links.
func TestNICConsistencySkipsInvalidValues(t *testing.T) {
	for _, extra := range []string{
		"  efficiency = 2", "  efficiency = \"x\"", "  max_rate = \"x\"", "  setup = \"x\"", "  latency = \"x\"",
	} {
		msg := parseErr(t, twoLinksOneNIC("", extra), Options{})
		assert.NotContains(t, msg, "Inconsistent", extra)
		assert.Equal(t, 1, strings.Count(msg, ": Error: "), "%s:\n%s", extra, msg)
	}
}

func ptr[T any](v T) *T { return &v }

func TestPerfOverrides(t *testing.T) {
	src := inPrefill(`  mfu               = 0.55
  comm_efficiency   = 0.8
  prefill_overhead  = "0"
  reserved_memory   = "1.44GiB"`)
	src = replace(src, `decode "d0" {`, `decode "d0" {
  mbu               = min(0.7, 0.75)
  step_overhead     = "1.5ms"
  allreduce_latency = "0s"
  reserved_memory   = "1181116006B"`)
	spec := mustParse(t, src, testOpts)
	assert.Equal(t, PerfOverrides{
		MFU: ptr(0.55), CommEfficiency: ptr(0.8), PrefillOverhead: ptr(time.Duration(0)),
		ReservedMemory: ptr(1.44 * (1 << 30)),
	}, spec.Prefill[0].Perf)
	assert.Equal(t, PerfOverrides{
		MBU: ptr(0.7), StepOverhead: ptr(1500 * time.Microsecond), AllReduceLatency: ptr(time.Duration(0)),
		ReservedMemory: ptr(1181116006.0),
	}, spec.Decode[0].Perf)
	assert.False(t, spec.Prefill[0].Perf.IsZero())

	// Absent overrides stay nil: "absent" is not 0.
	def := mustParse(t, minimal, testOpts)
	assert.True(t, def.Prefill[0].Perf.IsZero())
	assert.True(t, def.Decode[0].Perf.IsZero())
	assert.Nil(t, def.Decode[0].Perf.StepOverhead)

	// Overrides from variables.
	vsrc := "variable \"mfu\" { default = 0.35 }\nvariable \"mem\" { default = \"1.1GiB\" }\n" +
		inDecode("  mfu = var.mfu\n  reserved_memory = var.mem")
	spec = mustParse(t, vsrc, Options{Vars: map[string]string{"mfu": "0.5", "mem": "2GiB"}})
	assert.Equal(t, ptr(0.5), spec.Decode[0].Perf.MFU)
	assert.Equal(t, ptr(2147483648.0), spec.Decode[0].Perf.ReservedMemory)
}

func TestLinkOverrides(t *testing.T) {
	spec := mustParse(t, inLink("  efficiency = 0.06\n  max_rate = \"1.5 GB/s\"\n  setup = \"2ms\""), testOpts)
	l := spec.Links[0]
	assert.Equal(t, 0.06, l.Efficiency)
	assert.Equal(t, 1.5e9, l.MaxRate)
	assert.Equal(t, ptr(2*time.Millisecond), l.Setup)

	spec = mustParse(t, inLink("  setup = \"0\""), testOpts)
	assert.Equal(t, ptr(time.Duration(0)), spec.Links[0].Setup, "setup = 0 is not absent")
	assert.Zero(t, spec.Links[0].Efficiency)
	assert.Zero(t, spec.Links[0].MaxRate)

	spec = mustParse(t, minimal, testOpts)
	assert.Nil(t, spec.Links[0].Setup)
	assert.Empty(t, spec.Links[0].Faults)

	// Links over one device that agree on everything are fine.
	same := "  efficiency = 0.5\n  max_rate = \"2GB/s\"\n  setup = \"1ms\"\n  latency = \"50us\""
	spec = mustParse(t, twoLinksOneNIC(same, same), testOpts)
	nics, err := spec.NICs()
	require.NoError(t, err)
	require.Len(t, nics, 1)
	assert.Equal(t, NIC{
		Prefill: "p0", Device: "mlx5_0", Transport: TransportRDMA, Bandwidth: 25e9, Latency: 50 * time.Microsecond,
		Efficiency: 0.5, MaxRate: 2e9, Setup: ptr(time.Millisecond), Links: []int{0, 1},
	}, nics[0])
}

func TestLinkFaults(t *testing.T) {
	src := inLink(`  fault {
    at      = "30s"
    degrade = 0.5
  }
  fault {
    at  = "60s"
    cut = true
  }
  fault {
    at      = "90s"
    restore = true
  }
  fault {
    at      = "0"
    degrade = 1
  }`)
	spec := mustParse(t, src, testOpts)
	assert.Equal(t, []LinkFault{
		{At: 30 * time.Second, Kind: FaultDegrade, Factor: 0.5},
		{At: 60 * time.Second, Kind: FaultCut},
		{At: 90 * time.Second, Kind: FaultRestore},
		{At: 0, Kind: FaultDegrade, Factor: 1},
	}, spec.Links[0].Faults, "file order in the Spec")
	nics, err := spec.NICs()
	require.NoError(t, err)
	assert.Equal(t, []LinkFault{
		{At: 0, Kind: FaultDegrade, Factor: 1},
		{At: 30 * time.Second, Kind: FaultDegrade, Factor: 0.5},
		{At: 60 * time.Second, Kind: FaultCut},
		{At: 90 * time.Second, Kind: FaultRestore},
	}, nics[0].Faults, "time order on the NIC")
}

// Faults act on the NIC: links over one device contribute the union of
// their faults, a fault declared on several of them counts once, and
// links over other devices are unaffected.
func TestNICFaultUnion(t *testing.T) {
	cut := "  fault {\n    at  = \"60s\"\n    cut = true\n  }"
	deg := "  fault {\n    at      = \"60s\"\n    degrade = 0.5\n  }"
	half := "  fault {\n    at      = \"10s\"\n    degrade = 0.5\n  }"
	restore := "  fault {\n    at      = \"90s\"\n    restore = true\n  }"
	src := twoLinksOneNIC(cut+"\n"+half+"\n"+half, deg+"\n"+cut+"\n"+half+"\n"+restore)
	// p1 → d0/d1 over its own device: no faults.
	src += p1 + replace(l00, `"p0"`, `"p1"`) + replace(l01, `"p0"`, `"p1"`)
	spec := mustParse(t, src, testOpts)
	nics, err := spec.NICs()
	require.NoError(t, err)
	require.Len(t, nics, 3)
	assert.Equal(t, "p0", nics[0].Prefill)
	assert.Equal(t, []int{0, 1}, nics[0].Links)
	assert.Equal(t, []LinkFault{
		{At: 10 * time.Second, Kind: FaultDegrade, Factor: 0.5}, // twice on link 0, once on link 1: twice
		{At: 10 * time.Second, Kind: FaultDegrade, Factor: 0.5},
		{At: 60 * time.Second, Kind: FaultCut}, // on both links: once, first link's position first
		{At: 60 * time.Second, Kind: FaultDegrade, Factor: 0.5},
		{At: 90 * time.Second, Kind: FaultRestore},
	}, nics[0].Faults)
	for _, n := range nics[1:] {
		assert.Equal(t, "p1", n.Prefill)
		assert.Empty(t, n.Faults)
	}
}

// NICs rejects hand-built Specs whose links over one device disagree.
func TestNICsRejectsInconsistentSpecs(t *testing.T) {
	base := mustParse(t, twoLinksOneNIC("", ""), testOpts)
	for name, mut := range map[string]func(*Link){
		"transport":    func(l *Link) { l.Transport = TransportTCP },
		"bandwidth":    func(l *Link) { l.Bandwidth = 1 },
		"latency":      func(l *Link) { l.Latency = time.Second },
		"efficiency":   func(l *Link) { l.Efficiency = 0.5 },
		"rate ceiling": func(l *Link) { l.MaxRate = 1e9 },
		"setup cost":   func(l *Link) { l.Setup = ptr(time.Duration(0)) },
	} {
		spec := *base
		spec.Links = append([]Link(nil), base.Links...)
		mut(&spec.Links[1])
		_, err := spec.NICs()
		if assert.Error(t, err, name) {
			assert.Contains(t, err.Error(), "different "+name)
			assert.Contains(t, err.Error(), "p0/mlx5_0")
		}
	}
	nics, err := base.NICs()
	require.NoError(t, err)
	assert.Len(t, nics, 1)
}

// Every new attribute can come from a variable and an expression.
func TestOverridesFromExpressions(t *testing.T) {
	src := "variable \"f\" { default = 0.25 }\nvariable \"at\" { default = \"45s\" }\n" +
		inLink("  efficiency = var.f * 2\n  max_rate = \"${var.f * 8}GB/s\"\n  fault {\n    at = var.at\n    degrade = max(var.f, 0.1)\n  }")
	spec := mustParse(t, src, testOpts)
	assert.Equal(t, 0.5, spec.Links[0].Efficiency)
	assert.Equal(t, 2e9, spec.Links[0].MaxRate)
	assert.Equal(t, []LinkFault{{At: 45 * time.Second, Kind: FaultDegrade, Factor: 0.25}}, spec.Links[0].Faults)
}

// Several bad overrides: every one is reported, in file order, the same way
// every time (gohcl decodes attributes in map order).
func TestOverrideDiagnosticsAllReportedInOrder(t *testing.T) {
	src := inLink("  efficiency = 0\n  setup = \"-1s\"\n  max_rate = \"x\"\n  fault {\n    at = \"-1s\"\n    degrade = 0\n  }\n  fault {\n    at = \"1s\"\n  }")
	src = replace(src, `decode "d0" {`, "decode \"d0\" {\n  mfu = 0\n  mbu = \"x\"\n  step_overhead = \"5\"\n  reserved_memory = \"1Gb\"\n  comm_efficiency = 7")
	assert.Equal(t, []string{
		`Invalid value for "mfu"`,
		"Unsuitable value type",
		`Invalid duration for "step_overhead"`,
		`Invalid size for "reserved_memory"`,
		`Invalid value for "comm_efficiency"`,
		`Invalid value for "efficiency"`,
		`Invalid duration for "setup"`,
		`Invalid bandwidth for "max_rate"`,
		`Invalid duration for "at"`,
		`Invalid value for "degrade"`,
		"Empty fault block",
	}, diagSummaries(t, src, Options{}))
	first := parseErr(t, src, Options{})
	for range 20 {
		_, err := Parse("test.hcl", []byte(src), Options{})
		require.Equal(t, first, err.Error())
	}
}

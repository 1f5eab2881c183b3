package topology

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Fragments used to assemble test scenarios.
const (
	p0 = `
prefill "p0" {
  gpu   = "H200-SXM"
  model = "qwen3-coder-30b-a3b"
}
`
	p1 = `
prefill "p1" {
  gpu   = "H200-SXM"
  model = "qwen3-coder-30b-a3b"
}
`
	d0 = `
decode "d0" {
  gpu   = "H200-SXM"
  model = "qwen3-coder-30b-a3b"
}
`
	d1 = `
decode "d1" {
  gpu   = "H200-SXM"
  model = "qwen3-coder-30b-a3b"
}
`
	l00 = `
link "p0" "d0" {
  transport = "rdma"
  device    = "mlx5_0"
  bandwidth = "200Gbps"
}
`
	l01 = `
link "p0" "d1" {
  transport = "rdma"
  device    = "mlx5_1"
  bandwidth = "200Gbps"
}
`
	kvc     = "\nrouter \"kvc\" {}\n"
	vanilla = "\nrouter \"vanilla\" {}\n"
	// minimal is the smallest valid scenario.
	minimal = p0 + d0 + l00 + kvc
)

// testOpts turns preset checking on.
var testOpts = Options{
	KnownGPU:   func(n string) bool { return n == "H200-SXM" || n == "H100-SXM" },
	KnownModel: func(n string) bool { return n == "qwen3-coder-30b-a3b" || n == "llama-3.1-8b" },
	GPUNames:   []string{"H200-SXM", "H100-SXM"},
	ModelNames: []string{"qwen3-coder-30b-a3b", "llama-3.1-8b"},
}

func mustParse(t *testing.T, src string, opts Options) *Spec {
	t.Helper()
	spec, err := Parse("test.hcl", []byte(src), opts)
	require.NoError(t, err)
	require.NoError(t, checkInvariants(spec))
	return spec
}

func replace(src, old, new string) string {
	if !strings.Contains(src, old) {
		panic("fragment not found: " + old)
	}
	return strings.Replace(src, old, new, 1)
}

// TestDiagnostics has one case per diagnostic class. Each source marks the
// line the diagnostic must point at with "#!"; the rendered error must
// contain "test.hcl:LINE:" and every phrase.
func TestDiagnostics(t *testing.T) {
	cases := []struct {
		name    string
		src     string
		opts    Options
		phrases []string
	}{
		// Syntax and schema (HCL's own diagnostics).
		{"syntax error", minimal + "decode \"d9\" { #!\n", Options{}, []string{"Unclosed configuration block"}},
		{"unknown top-level block", minimal + "decoder \"d1\" { #!\n}\n", Options{}, []string{"Unsupported block type", `Did you mean "decode"?`}},
		{"unknown top-level attribute", minimal + "nmae = \"x\" #!\n", Options{}, []string{"Unsupported argument", `Did you mean "name"?`}},
		{"unknown worker attribute", replace(minimal, `decode "d0" {`, "decode \"d0\" {\n  max_runing = 3 #!"), Options{}, []string{"Unsupported argument", `Did you mean "max_running"?`}},
		{"max_running on prefill", replace(minimal, `prefill "p0" {`, "prefill \"p0\" {\n  max_running = 3 #!"), Options{}, []string{"Unsupported argument", `"max_running" is not expected here`}},
		{"missing gpu", replace(minimal, "prefill \"p0\" {\n  gpu   = \"H200-SXM\"\n", "prefill \"p0\" { #!\n"), Options{}, []string{"Missing required argument", `"gpu" is required`}},
		{"wrong type", replace(minimal, `decode "d0" {`, "decode \"d0\" {\n  tp = \"two\" #!"), Options{}, []string{"Unsuitable value type", "a number is required"}},
		{"fractional int", replace(minimal, `decode "d0" {`, "decode \"d0\" {\n  tp = 2.5 #!"), Options{}, []string{"Unsuitable value type", "a whole number is required"}},

		// Workers.
		{"duplicate worker across kinds", minimal + "fused \"p0\" { #!\n  gpu = \"H200-SXM\"\n  model = \"m\"\n}\n", Options{}, []string{"Duplicate worker name", `prefill worker named "p0" was already declared at test.hcl:2`}},
		{"duplicate decode worker", p0 + d0 + replace(d0, `decode "d0" {`, `decode "d0" { #!`) + l00 + kvc, Options{}, []string{"Duplicate worker name", "must be unique"}},
		{"invalid worker name", replace(minimal, `decode "d0" {`, `decode "d 0" { #!`), Options{}, []string{"Invalid worker name"}},
		{"tp zero", replace(minimal, `decode "d0" {`, "decode \"d0\" {\n  tp = 0 #!"), Options{}, []string{`Invalid value for "tp"`, "must be between 1 and 64; got 0"}},
		{"negative kv budget", replace(minimal, `decode "d0" {`, "decode \"d0\" {\n  kv_budget_tokens = -1 #!"), Options{}, []string{`Invalid value for "kv_budget_tokens"`, "between 0 and 1073741824; got -1"}},
		{"mem fraction zero", replace(minimal, `prefill "p0" {`, "prefill \"p0\" {\n  mem_fraction_static = 0 #!"), Options{}, []string{`Invalid value for "mem_fraction_static"`, "(0, 1]"}},
		{"mem fraction above one", replace(minimal, `prefill "p0" {`, "prefill \"p0\" {\n  mem_fraction_static = 1.2 #!"), Options{}, []string{`Invalid value for "mem_fraction_static"`, "got 1.2"}},
		{"max_batch_tokens zero", replace(minimal, `prefill "p0" {`, "prefill \"p0\" {\n  max_batch_tokens = 0 #!"), Options{}, []string{`Invalid value for "max_batch_tokens"`}},
		{"max_running zero", replace(minimal, `decode "d0" {`, "decode \"d0\" {\n  max_running = 0 #!"), Options{}, []string{`Invalid value for "max_running"`}},
		{"unknown gpu with suggestion", replace(minimal, "decode \"d0\" {\n  gpu   = \"H200-SXM\"", "decode \"d0\" {\n  gpu   = \"H200-SMX\" #!"), testOpts, []string{"Unknown GPU preset", `Did you mean "H200-SXM"?`}},
		{"unknown gpu lists presets", replace(minimal, "decode \"d0\" {\n  gpu   = \"H200-SXM\"", "decode \"d0\" {\n  gpu   = \"B200\" #!"), testOpts, []string{"Unknown GPU preset", `Known presets: "H100-SXM" and "H200-SXM"`}},
		{"unknown model", replace(minimal, "  model = \"qwen3-coder-30b-a3b\"\n}\n\ndecode", "  model = \"qwen3-coder-30b\" #!\n}\n\ndecode"), testOpts, []string{"Unknown model preset", `"qwen3-coder-30b"`}},
		{"empty gpu", replace(minimal, "decode \"d0\" {\n  gpu   = \"H200-SXM\"", "decode \"d0\" {\n  gpu   = \"\" #!"), Options{}, []string{"Empty GPU preset"}},
		{"no workers", "router \"kvc\" {} #!\n", Options{}, []string{"No workers"}},

		// Links.
		{"link from unknown worker", p0 + d0 + l00 + kvc + "link \"p9\" \"d0\" { #!\n  transport = \"rdma\"\n  device = \"mlx5_1\"\n  bandwidth = \"1GB/s\"\n}\n", Options{}, []string{"Unknown worker", `link source "p9" is not a declared worker. Did you mean "p0"?`}},
		{"link to unknown worker", replace(minimal, `link "p0" "d0" {`, `link "p0" "dd0" { #!`), Options{}, []string{"Unknown worker", `Did you mean "d0"?`}},
		{"link from decode worker", p0 + d0 + d1 + l00 + l01 + kvc + "link \"d0\" \"d1\" { #!\n  transport = \"rdma\"\n  device = \"mlx5_1\"\n  bandwidth = \"1GB/s\"\n}\n", Options{}, []string{"Invalid link endpoint", `source must be a prefill worker, but "d0" is a decode worker`}},
		{"link to prefill worker", p0 + p1 + d0 + l00 + replace(l00, `"p0"`, `"p1"`) + kvc + "link \"p0\" \"p1\" { #!\n  transport = \"rdma\"\n  device = \"mlx5_1\"\n  bandwidth = \"1GB/s\"\n}\n", Options{}, []string{"Invalid link endpoint", `destination must be a decode worker, but "p1" is a prefill worker`}},
		{"duplicate link", minimal + replace(l00, `link "p0" "d0" {`, `link "p0" "d0" { #!`), Options{}, []string{"Duplicate link", `A link from "p0" to "d0" was already declared at test.hcl:`}},
		{"bad transport", replace(minimal, `transport = "rdma"`, `transport = "RDMA" #!`), Options{}, []string{"Invalid transport", `"rdma" or "tcp"`, `Did you mean "rdma"?`}},
		{"bad bandwidth", replace(minimal, `bandwidth = "200Gbps"`, `bandwidth = "fast" #!`), Options{}, []string{"Invalid bandwidth", `does not start with a number`}},
		{"bad bandwidth unit", replace(minimal, `bandwidth = "200Gbps"`, `bandwidth = "200Gbs" #!`), Options{}, []string{"Invalid bandwidth", `unknown unit "Gbs"`}},
		{"zero bandwidth", replace(minimal, `bandwidth = "200Gbps"`, `bandwidth = 0 #!`), Options{}, []string{"Invalid bandwidth", "positive"}},
		{"inconsistent nic bandwidth", p0 + d0 + d1 + l00 + replace(replace(l01, `"mlx5_1"`, `"mlx5_0"`), `bandwidth = "200Gbps"`, `bandwidth = "100Gbps" #!`) + kvc, Options{}, []string{"Inconsistent NIC bandwidth", `device "mlx5_0"`}},
		{"bad latency", replace(minimal, `bandwidth = "200Gbps"`, "bandwidth = \"200Gbps\"\n  latency = \"20\" #!"), Options{}, []string{`Invalid duration for "latency"`, "Go duration syntax"}},
		{"negative latency", replace(minimal, `bandwidth = "200Gbps"`, "bandwidth = \"200Gbps\"\n  latency = \"-1us\" #!"), Options{}, []string{`Invalid duration for "latency"`, "must not be negative"}},
		{"empty device", replace(minimal, `device    = "mlx5_0"`, `device = "" #!`), Options{}, []string{"Empty NIC device"}},

		// Router.
		{"missing link", p0 + replace(d0, `decode "d0" {`, `decode "d0" { #!`) + kvc, Options{}, []string{"Missing link", `decode worker "d0" has no link from prefill worker "p0"`, `link "p0" "d0" {`}},
		{"missing link two prefill", p0 + p1 + replace(d0, `decode "d0" {`, `decode "d0" { #!`) + vanilla, Options{}, []string{"Missing link", `from prefill workers "p0" and "p1"`}},
		{"no decode workers", p0 + "router \"kvc\" {} #!\n", Options{}, []string{"No decode workers", `"kvc" policy`}},
		{"no prefill workers", d0 + "router \"vanilla\" {} #!\n", Options{}, []string{"No prefill workers", `"vanilla" policy`}},
		{"fused under kvc", minimal + "fused \"w0\" { #!\n  gpu = \"H200-SXM\"\n  model = \"m\"\n}\n", Options{}, []string{"Worker not used by the router policy", `fused worker "w0"`}},
		{"unknown policy", replace(minimal, `router "kvc" {}`, `router "kcv" {} #!`), Options{}, []string{"Unknown router policy", `Did you mean "kvc"?`, `"kvc", "least_loaded"`, `"ttl_aware" and "vanilla"`}},
		{"misspelt router parameter", replace(minimal, `router "kvc" {}`, "router \"kvc\" {\n  tau_rejct = 2 #!\n}"), Options{}, []string{"Unsupported argument", `Did you mean "tau_reject"?`}},
		{"vanilla takes no kvc parameters", replace(minimal, `router "kvc" {}`, "router \"vanilla\" {\n  alpha = 2 #!\n}"), Options{}, []string{"Unsupported argument", `"alpha" is not expected here`}},
		{"router block in router", replace(minimal, `router "kvc" {}`, "router \"kvc\" {\n  x { #!\n  }\n}"), Options{}, []string{"Unsupported block type"}},
		{"missing router", "#!\n" + p0 + d0 + l00, Options{}, []string{"Missing router block", `"kvc", "least_loaded"`, `"ttl_aware" and "vanilla"`, "bucket, global_router and local_router blocks"}},
		{"duplicate router", minimal + "router \"vanilla\" {} #!\n", Options{}, []string{"Duplicate router block"}},
		{"rho zero", replace(minimal, `router "kvc" {}`, "router \"kvc\" {\n  rho = 0 #!\n}"), Options{}, []string{`Invalid value for "rho"`, "(0, 1]"}},
		{"rho above one", replace(minimal, `router "kvc" {}`, "router \"kvc\" {\n  rho = 1.01 #!\n}"), Options{}, []string{`Invalid value for "rho"`, "got 1.01"}},
		{"alpha negative", replace(minimal, `router "kvc" {}`, "router \"kvc\" {\n  alpha = -0.5 #!\n}"), Options{}, []string{`Invalid value for "alpha"`, "at least 0"}},
		{"tau_reject zero", replace(minimal, `router "kvc" {}`, "router \"kvc\" {\n  tau_reject = 0 #!\n}"), Options{}, []string{`Invalid value for "tau_reject"`, "at least 1"}},
		{"tau_append negative", replace(minimal, `router "kvc" {}`, "router \"kvc\" {\n  tau_append = -1 #!\n}"), Options{}, []string{`Invalid value for "tau_append"`, "at least 0"}},
		{"epsilon zero", replace(minimal, `router "kvc" {}`, "router \"kvc\" {\n  epsilon = 0 #!\n}"), Options{}, []string{`Invalid value for "epsilon"`, "at least 1"}},
		{"block_tokens zero", replace(minimal, `router "kvc" {}`, "router \"vanilla\" {\n  block_tokens = 0 #!\n}"), Options{}, []string{`Invalid value for "block_tokens"`, "at least 1"}},
		{"v1 not bool", replace(minimal, `router "kvc" {}`, "router \"kvc\" {\n  v1 = \"maybe\" #!\n}"), Options{}, []string{"Unsuitable value type", "bool"}},
		{"infinite alpha", replace(minimal, `router "kvc" {}`, "router \"kvc\" {\n  alpha = 1e400 #!\n}"), Options{}, []string{"Number out of range"}},
		{"tiny literal", replace(minimal, `router "kvc" {}`, "router \"kvc\" {\n  rho = 1e-400 #!\n}"), Options{}, []string{"Number out of range"}},
		{"huge float from arithmetic", replace(minimal, `router "kvc" {}`, "router \"kvc\" {\n  rho = 1e300 * 1e300 #!\n}"), Options{}, []string{"Unsuitable value type", "out of range"}},

		// Workload.
		{"bad clock", minimal + "workload {\n  clock = \"walll\" #!\n}\n", Options{}, []string{`Invalid value for "clock"`, `"virtual" or "wall"`, `Did you mean "wall"?`}},
		{"bad loop", minimal + "workload {\n  loop = \"half-open\" #!\n}\n", Options{}, []string{`Invalid value for "loop"`, `"closed" or "open"`}},
		{"time_scale zero", minimal + "workload {\n  time_scale = 0 #!\n}\n", Options{}, []string{`Invalid value for "time_scale"`, "greater than 0"}},
		{"negative seed", minimal + "workload {\n  seed = -1 #!\n}\n", Options{}, []string{`Invalid value for "seed"`, "whole number"}},
		{"negative max_requests", minimal + "workload {\n  max_requests = -1 #!\n}\n", Options{}, []string{`Invalid value for "max_requests"`}},
		{"bad sample_interval", minimal + "workload {\n  sample_interval = \"often\" #!\n}\n", Options{}, []string{`Invalid duration for "sample_interval"`}},
		{"zero sample_interval", minimal + "workload {\n  sample_interval = \"0s\" #!\n}\n", Options{}, []string{`Invalid duration for "sample_interval"`, "at least 1ms"}},
		{"dram tier on a decode worker", replace(minimal, `decode "d0" {`, "decode \"d0\" {\n  dram_cache_tokens = 1000 #!"), Options{}, []string{"DRAM tier on a decode worker"}},
		{"dram tier on a prefill worker", replace(minimal, `prefill "p0" {`, "prefill \"p0\" {\n  dram_bandwidth = \"50GB/s\" #!"), Options{}, []string{"DRAM tier on a prefill worker"}},
		{"trace option without trace", minimal + "workload {\n  share_prefix = true #!\n}\n", Options{}, []string{"Trace option without trace", `"share_prefix"`}},
		{"session_rate zero", minimal + "workload {\n  trace = \"x\"\n  session_rate = 0 #!\n}\n", Options{}, []string{`Invalid value for "session_rate"`}},
		{"max_concurrent zero", minimal + "workload {\n  trace = \"x\"\n  max_concurrent = 0 #!\n}\n", Options{}, []string{`Invalid value for "max_concurrent"`}},
		{"two session start rules", minimal + "workload {\n  trace = \"x\"\n  session_rate = 1\n  max_concurrent = 32 #!\n}\n", Options{}, []string{"Conflicting session starts"}},
		{"trace and generator", minimal + "workload {\n  trace = \"x.jsonl\"\n  generator \"agentic\" { #!\n  }\n}\n", Options{}, []string{"Conflicting workload sources", "mutually exclusive"}},
		{"format without trace", minimal + "workload {\n  format = \"mooncake\" #!\n}\n", Options{}, []string{"Format without trace"}},
		{"unknown format", minimal + "workload {\n  trace = \"x\"\n  format = \"mooncak\" #!\n}\n", Options{KnownFormat: func(s string) bool { return s == "mooncake" }, FormatNames: []string{"mooncake", "weka"}}, []string{"Unknown trace format", `Did you mean "mooncake"?`}},
		{"unknown generator", minimal + "workload {\n  generator \"agentc\" { #!\n  }\n}\n", Options{}, []string{"Unknown generator", `Did you mean "agentic"?`}},
		{"duplicate generator", minimal + "workload {\n  generator \"agentic\" {}\n  generator \"agentic\" {} #!\n}\n", Options{}, []string{"Duplicate generator block"}},
		{"duplicate workload", minimal + "workload {}\nworkload {} #!\n", Options{}, []string{"Duplicate workload block"}},
		{"generator sessions zero", minimal + "workload {\n  generator \"agentic\" {\n    sessions = 0 #!\n  }\n}\n", Options{}, []string{`Invalid value for "sessions"`, "between 1 and 1048576"}},
		// Input bounds: implausible values are refused with the bound.
		{"implausible latency", replace(minimal, `bandwidth = "200Gbps"`, "bandwidth = \"200Gbps\"\n  latency = \"2562047h\" #!"), Options{}, []string{`Implausible duration for "latency"`, "must be at most 10s; got 2562047h0m0s"}},
		{"implausible bandwidth", replace(minimal, `bandwidth = "200Gbps"`, "bandwidth = \"1bps\" #!"), Options{}, []string{"Invalid bandwidth", "between 1Mbps and 100Tbps"}},
		{"bandwidth without a unit", replace(minimal, `bandwidth = "200Gbps"`, "bandwidth = 200 #!"), Options{}, []string{"Invalid bandwidth", `did you mean "200Gbps"?`}},
		{"max_rate without a unit", replace(minimal, `bandwidth = "200Gbps"`, "bandwidth = \"200Gbps\"\n  max_rate = 1.5e9 #!"), Options{}, []string{`did you mean "1.5GB/s"?`}},
		{"reserved_memory without a unit", replace(minimal, `decode "d0" {`, "decode \"d0\" {\n  reserved_memory = 1181116006 #!"), Options{}, []string{`Invalid size for "reserved_memory"`, `did you mean "1.1GiB"?`}},
		{"implausible think time", minimal + "workload {\n  generator \"agentic\" {\n    think_time = \"1000h\" #!\n  }\n}\n", Options{}, []string{`Implausible duration for "think_time"`, "at most 24h0m0s"}},
		{"implausible fault time", replace(minimal, `bandwidth = "200Gbps"`, "bandwidth = \"200Gbps\"\n  fault {\n    at = \"100000h\" #!\n    cut = true\n  }"), Options{}, []string{`Implausible duration for "at"`, "at most 8760h"}},
		{"implausible time_scale", minimal + "workload {\n  time_scale = 1e9 #!\n}\n", Options{}, []string{`Invalid value for "time_scale"`, "at most 1e+06"}},
		{"implausible session_rate", strings.Replace(minimal, "router", "workload {\n  trace = \"x.jsonl\"\n  session_rate = 1e7 #!\n}\nrouter", 1), Options{}, []string{`Invalid value for "session_rate"`, "at most 1e+06"}},
		{"implausible kv budget", replace(minimal, `decode "d0" {`, "decode \"d0\" {\n  kv_budget_tokens = 1e12 #!"), Options{}, []string{`Invalid value for "kv_budget_tokens"`, "between 0 and 1073741824"}},
		{"too fine sampling", minimal + "workload {\n  sample_interval = \"10us\" #!\n}\n", Options{}, []string{`Invalid duration for "sample_interval"`, "at least 1ms"}},
		{"too coarse sampling", minimal + "workload {\n  sample_interval = \"2h\" #!\n}\n", Options{}, []string{`Implausible duration for "sample_interval"`, "at most 1h0m0s"}},
		{"append_tokens zero", minimal + "workload {\n  generator \"agentic\" {\n    append_tokens = 0 #!\n  }\n}\n", Options{}, []string{`Invalid value for "append_tokens"`, "every turn appends at least one"}},
		{"generator negative think time", minimal + "workload {\n  generator \"agentic\" {\n    think_time = \"-2s\" #!\n  }\n}\n", Options{}, []string{`Invalid duration for "think_time"`, "negative"}},
		{"generator misspelt attribute", minimal + "workload {\n  generator \"agentic\" {\n    sesions = 3 #!\n  }\n}\n", Options{}, []string{"Unsupported argument", `Did you mean "sessions"?`}},

		// Variables.
		{"undeclared var reference", replace(minimal, `decode "d0" {`, "variable \"sessions\" { default = 1 }\ndecode \"d0\" {\n  tp = var.sesions #!"), Options{}, []string{"Undeclared variable", `Did you mean "sessions"?`}},
		{"unknown root variable", replace(minimal, `decode "d0" {`, "decode \"d0\" {\n  tp = vars.x #!"), Options{}, []string{"Unknown variable", `Did you mean "var"?`}},
		{"required variable", "variable \"n\" {} #!\n" + minimal, Options{}, []string{"No value for required variable", "-var n=VALUE"}},
		{"duplicate variable", "variable \"n\" { default = 1 }\nvariable \"n\" { default = 2 } #!\n" + minimal, Options{}, []string{"Duplicate variable declaration"}},
		{"variable default uses var", "variable \"a\" { default = 1 }\nvariable \"b\" { default = var.a } #!\n" + minimal, Options{}, []string{"Variables not allowed"}},
		{"unknown function", replace(minimal, `decode "d0" {`, "decode \"d0\" {\n  tp = abs(1) #!"), Options{}, []string{"Call to unknown function"}},
		{"var of wrong type", "variable \"n\" { default = \"x\" }\n" + replace(minimal, `decode "d0" {`, "decode \"d0\" {\n  tp = var.n #!"), Options{}, []string{"Unsuitable value type", "a number is required"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkMarkedDiag(t, tc.src, tc.opts, tc.phrases)
		})
	}
}

func TestMissingRouterAndNoWorkersPointAtFileStart(t *testing.T) {
	msg := parseErr(t, "name = \"x\"\n", Options{})
	assert.Contains(t, msg, "test.hcl:1:1: Error: Missing router block")
	assert.Contains(t, msg, "test.hcl:1:1: Error: No workers")
}

func TestUndeclaredCLIVariable(t *testing.T) {
	msg := parseErr(t, "variable \"sessions\" { default = 1 }\n"+minimal, Options{Vars: map[string]string{"sesions": "3"}})
	assert.Contains(t, msg, "Value for undeclared variable")
	assert.Contains(t, flat(msg), `Did you mean "sessions"?`)
}

func TestCollectsAllErrors(t *testing.T) {
	src := replace(replace(replace(minimal,
		`decode "d0" {`, "decode \"d0\" {\n  tp = 0"),
		`transport = "rdma"`, `transport = "udp"`),
		`router "kvc" {}`, "router \"kvc\" {\n  rho = 2\n  epsilon = 0\n}") +
		"workload {\n  clock = \"sundial\"\n}\n"
	assert.Equal(t, []string{
		`Invalid value for "tp"`,
		"Invalid transport",
		`Invalid value for "rho"`,
		`Invalid value for "epsilon"`,
		`Invalid value for "clock"`,
	}, diagSummaries(t, src, Options{}), "all errors, in file order")
}

func TestDiagnosticsAreDeterministic(t *testing.T) {
	src := replace(minimal, `decode "d0" {`, "decode \"d0\" {\n  tp = \"x\"\n  max_running = \"y\"\n  max_batch_tokens = \"z\"\n  kv_budget_tokens = \"w\"\n  mem_fraction_static = \"v\"")
	first := parseErr(t, src, Options{})
	for range 20 {
		require.Equal(t, first, parseErr(t, src, Options{}))
	}
}

func TestDiagErrorFormat(t *testing.T) {
	src := replace(minimal, `decode "d0" {`, "decode \"d0\" {\n  tp = 0")
	_, err := Parse("dir/test.hcl", []byte(src), Options{})
	var de *DiagError
	require.ErrorAs(t, err, &de)
	msg := de.Error()
	assert.True(t, strings.HasPrefix(msg, "dir/test.hcl:8:3: Error: Invalid value for \"tp\"\n"), msg)
	assert.Contains(t, msg, "on dir/test.hcl line 8, in decode \"d0\":")
	assert.Contains(t, msg, "   8:   tp = 0\n", "source snippet")
	assert.Contains(t, msg, "must be between 1 and 64; got 0.")
	assert.NotContains(t, msg, "\x1b[")

	var buf bytes.Buffer
	require.NoError(t, de.Write(&buf, true))
	assert.Contains(t, buf.String(), "\x1b[31mError\x1b[0m")
}

func TestDefaults(t *testing.T) {
	spec := mustParse(t, p0+d0+l00+kvc, testOpts)
	assert.Equal(t, "test.hcl", spec.Source)
	assert.Equal(t, "", spec.Name)
	assert.Equal(t, []Worker{DefaultWorker("p0", KindPrefill, "H200-SXM", "qwen3-coder-30b-a3b")}, spec.Prefill)
	assert.Equal(t, []Worker{{
		Name: "d0", Kind: KindDecode, GPU: "H200-SXM", Model: "qwen3-coder-30b-a3b",
		TP: 1, KVBudgetTokens: 0, MemFractionStatic: 0.88, MaxBatchTokens: 16384, MaxRunning: 256,
	}}, spec.Decode)
	assert.Empty(t, spec.Fused)
	assert.Equal(t, []Link{{
		From: "p0", To: "d0", Transport: TransportRDMA, Device: "mlx5_0",
		Bandwidth: 25e9, Latency: 10 * time.Microsecond,
	}}, spec.Links)
	assert.Equal(t, Router{
		Policy: "kvc", Alpha: 1, TauReject: 3, TauAppend: 8192, Rho: 0.95, Epsilon: 1, // ε defaults to |D|
		BlockTokens: 24, V1: false, AllBlacklisted: AllBlacklistedLeastRejected, ReserveOutput: true, RoutingLog: true, LogCandidates: DefaultLogCandidates,
	}, spec.Router)
	assert.Equal(t, Workload{
		Clock: ClockVirtual, TimeScale: 1, Seed: 1, MaxRequests: 0, Loop: LoopClosed,
		SampleInterval: time.Second,
		Generator: Generator{
			Sessions: 16, Turns: 24, SystemTokens: 4000, FirstTokens: 2000, AppendTokens: 600,
			OutputTokens: 150, ThinkTime: 2500 * time.Millisecond, SessionStagger: time.Second, BlockTokens: 24,
		},
	}, spec.Workload)

	// An empty workload block and an empty generator block change nothing.
	spec2 := mustParse(t, p0+d0+l00+kvc+"workload {\n  generator \"agentic\" {}\n}\n", testOpts)
	assert.Equal(t, spec.Workload, spec2.Workload)

	// Vanilla keeps the spec defaults for parameters it does not take.
	spec3 := mustParse(t, p0+d0+l00+vanilla, testOpts)
	assert.Equal(t, DefaultRouter("vanilla"), spec3.Router)
}

func TestFullScenario(t *testing.T) {
	src := `
name = "full"
prefill "p0" {
  gpu                 = "H100-SXM"
  model               = "llama-3.1-8b"
  tp                  = 2
  kv_budget_tokens    = 400000
  mem_fraction_static = 0.9
  max_batch_tokens    = 8192
}
decode "d0" {
  gpu              = "H200-SXM"
  model            = "qwen3-coder-30b-a3b"
  kv_budget_tokens = 92104
  max_running      = 64
}
fused "w0" {
  gpu   = "H200-SXM"
  model = "qwen3-coder-30b-a3b"
}
link "p0" "d0" {
  transport = "tcp"
  device    = "eth0"
  bandwidth = "25 GB/s"
  latency   = "50us"
}
router "kvc" {
  alpha          = 0.5
  tau_reject     = 4
  tau_append     = 2048
  rho            = 0.9
  epsilon        = 3
  block_tokens   = 16
  v1             = true
  reserve_output = false
}
workload {
  clock           = "wall"
  time_scale      = 10
  seed            = 18446744073709551615
  loop            = "open"
  max_requests    = 100
  sample_interval = "250ms"
  trace           = "/abs/trace.jsonl"
  format          = "mooncake"
}
`
	// Fused workers are not used by kvc; drop the block for this policy.
	src = replace(src, "fused \"w0\" {\n  gpu   = \"H200-SXM\"\n  model = \"qwen3-coder-30b-a3b\"\n}\n", "")
	spec := mustParse(t, src, testOpts)
	assert.Equal(t, "full", spec.Name)
	assert.Equal(t, Worker{Name: "p0", Kind: KindPrefill, GPU: "H100-SXM", Model: "llama-3.1-8b", TP: 2,
		KVBudgetTokens: 400000, MemFractionStatic: 0.9, MaxBatchTokens: 8192, MaxRunning: 256}, spec.Prefill[0])
	assert.Equal(t, 64, spec.Decode[0].MaxRunning)
	assert.Equal(t, 92104, spec.Decode[0].KVBudgetTokens)
	assert.Equal(t, Link{From: "p0", To: "d0", Transport: TransportTCP, Device: "eth0", Bandwidth: 25e9, Latency: 50 * time.Microsecond}, spec.Links[0])
	assert.Equal(t, Router{Policy: "kvc", Alpha: 0.5, TauReject: 4, TauAppend: 2048, Rho: 0.9, Epsilon: 3,
		BlockTokens: 16, V1: true, AllBlacklisted: AllBlacklistedDegenerate, ReserveOutput: false, RoutingLog: true, LogCandidates: DefaultLogCandidates}, spec.Router)
	assert.Equal(t, ClockWall, spec.Workload.Clock)
	assert.Equal(t, 10.0, spec.Workload.TimeScale)
	assert.Equal(t, uint64(18446744073709551615), spec.Workload.Seed)
	assert.Equal(t, LoopOpen, spec.Workload.Loop)
	assert.Equal(t, 100, spec.Workload.MaxRequests)
	assert.Equal(t, 250*time.Millisecond, spec.Workload.SampleInterval)
	assert.Equal(t, "/abs/trace.jsonl", spec.Workload.Trace)
	assert.Equal(t, "mooncake", spec.Workload.Format)
}

func TestFileOrder(t *testing.T) {
	src := p1 + p0 + d1 + d0 +
		replace(l00, `"p0" "d0"`, `"p1" "d1"`) + replace(l00, `"p0" "d0"`, `"p1" "d0"`) +
		replace(l00, `"p0" "d0"`, `"p0" "d1"`) + l00 + vanilla
	spec := mustParse(t, src, Options{})
	names := func(ws []Worker) (out []string) {
		for _, w := range ws {
			out = append(out, w.Name)
		}
		return out
	}
	assert.Equal(t, []string{"p1", "p0"}, names(spec.Prefill))
	assert.Equal(t, []string{"d1", "d0"}, names(spec.Decode))
	var links []string
	for _, l := range spec.Links {
		links = append(links, l.From+">"+l.To)
	}
	assert.Equal(t, []string{"p1>d1", "p1>d0", "p0>d1", "p0>d0"}, links)
}

func TestVars(t *testing.T) {
	src := `
variable "sessions" { default = 16 }
variable "tp" {
  description = "tensor parallel degree"
  default     = 1
}
variable "clock" { default = "virtual" }
variable "v1" { default = false }
variable "rho" { default = 0.95 }
` + replace(replace(minimal, `decode "d0" {`, "decode \"d0\" {\n  tp = var.tp"), `router "kvc" {}`, "router \"kvc\" {\n  v1 = var.v1\n  rho = var.rho\n}") + `
workload {
  clock = var.clock
  generator "agentic" {
    sessions = var.sessions
    turns    = var.sessions * 2
  }
}
`
	// what the variables set: the defaults, or the values given on the
	// command line (turns follows sessions through var.sessions * 2)
	type set struct {
		Sessions, Turns, TP int
		Clock               string
		V1                  bool
		Rho                 float64
	}
	for _, c := range []struct {
		name string
		vars map[string]string
		want set
	}{
		{"defaults", nil, set{16, 32, 1, ClockVirtual, false, 0.95}},
		{"override", map[string]string{"sessions": "52", "tp": "4", "clock": "wall", "v1": "true", "rho": "0.5"},
			set{52, 104, 4, ClockWall, true, 0.5}},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := mustParse(t, src, Options{Vars: c.vars})
			assert.Equal(t, c.want, set{spec.Workload.Generator.Sessions, spec.Workload.Generator.Turns,
				spec.Decode[0].TP, spec.Workload.Clock, spec.Router.V1, spec.Router.Rho})
		})
	}
	t.Run("override with invalid value", func(t *testing.T) {
		msg := parseErr(t, src, Options{Vars: map[string]string{"tp": "0"}})
		assert.Contains(t, msg, `Invalid value for "tp"`)
		assert.Contains(t, msg, "test.hcl:17:3:")
	})
	t.Run("string value where a number is needed", func(t *testing.T) {
		msg := parseErr(t, src, Options{Vars: map[string]string{"tp": "four"}})
		assert.Contains(t, msg, "Unsuitable value type")
		assert.Contains(t, msg, "var.tp")
	})
}

func TestCLIValueTyping(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"16", "cty.NumberIntVal(16)"},
		{"-3", "cty.NumberIntVal(-3)"},
		{"0.5", "cty.NumberFloatVal(0.5)"},
		{"1e3", "cty.NumberIntVal(1000)"},
		{"true", "cty.True"},
		{"false", "cty.False"},
		{"True", `cty.StringVal("True")`},
		{"inf", `cty.StringVal("inf")`},
		{"NaN", `cty.StringVal("NaN")`},
		{"0x10", `cty.StringVal("0x10")`},
		{"0e5", "cty.NumberIntVal(0)"},
		{"-0.0", "cty.NumberIntVal(-0)"},
		{"1e400", `cty.StringVal("1e400")`},
		{"1e-400", `cty.StringVal("1e-400")`},
		{"16 ", `cty.StringVal("16 ")`},
		{"", `cty.StringVal("")`},
		{"mlx5_0", `cty.StringVal("mlx5_0")`},
	} {
		assert.Equal(t, tc.want, cliValue(tc.in).GoString(), tc.in)
	}
}

func TestFunctions(t *testing.T) {
	src := "variable \"n\" { default = ceil(2.1) }\n" + replace(replace(minimal,
		`decode "d0" {`, "decode \"d0\" {\n  tp = max(1, var.n)\n  max_running = min(256, var.n * 10)\n  kv_budget_tokens = floor(92104.9)\n  mem_fraction_static = min(0.9, 0.95)"),
		`router "kvc" {}`, "router \"kvc\" {\n  tau_append = ceil(8191.5)\n  alpha = max(0, -1)\n}")
	spec := mustParse(t, src, Options{})
	assert.Equal(t, 3, spec.Decode[0].TP)
	assert.Equal(t, 30, spec.Decode[0].MaxRunning)
	assert.Equal(t, 92104, spec.Decode[0].KVBudgetTokens)
	assert.Equal(t, 0.9, spec.Decode[0].MemFractionStatic)
	assert.Equal(t, 8192, spec.Router.TauAppend)
	assert.Equal(t, 0.0, spec.Router.Alpha)
}

func TestTracePath(t *testing.T) {
	wl := func(trace string) string { return minimal + "workload {\n  trace = \"" + trace + "\"\n}\n" }
	for _, tc := range []struct {
		name, filename, baseDir, trace, want string
	}{
		{"relative to file dir", "scen/x.hcl", "", "../traces/a.jsonl", "traces/a.jsonl"},
		{"file in cwd", "x.hcl", "", "traces/a.jsonl", "traces/a.jsonl"},
		{"absolute file dir", "/etc/pdemu/x.hcl", "", "t/a.jsonl", "/etc/pdemu/t/a.jsonl"},
		{"absolute trace", "scen/x.hcl", "", "/data/a.jsonl", "/data/a.jsonl"},
		{"base dir override", "<embedded>/x.hcl", "/work", "traces/a", "/work/traces/a"},
		{"directory trace", "a/b/x.hcl", "", "../weka/", "a/weka"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := Parse(tc.filename, []byte(wl(tc.trace)), Options{BaseDir: tc.baseDir})
			require.NoError(t, err)
			assert.Equal(t, filepath.FromSlash(tc.want), spec.Workload.Trace)
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.hcl")
	require.NoError(t, os.WriteFile(path, []byte(minimal+"workload {\n  trace = \"t.jsonl\"\n}\n"), 0o644))
	spec, err := Load(path, Options{})
	require.NoError(t, err)
	assert.Equal(t, path, spec.Source)
	assert.Equal(t, filepath.Join(dir, "t.jsonl"), spec.Workload.Trace)

	_, err = Load(filepath.Join(dir, "missing.hcl"), Options{})
	require.Error(t, err)
	assert.True(t, errors.Is(err, fs.ErrNotExist), "%v", err)

	require.NoError(t, os.WriteFile(path, []byte("router \"kvc\" {\n  rho = 2\n}\n"), 0o644))
	_, err = Load(path, Options{})
	var de *DiagError
	require.ErrorAs(t, err, &de)
	assert.Contains(t, err.Error(), path+":2:3:")
}

// TestPolicyTable checks the router table's rows, not a second list of
// their names (a new policy is one row: docs/CONTRIBUTING.md, recipe 1;
// cluster's TestRegistryMatchesHCL checks the constructors
// against it): names sorted and once each, the seeds' two policies among
// them, and each row's parameters, kinds and doc.
func TestPolicyTable(t *testing.T) {
	names := Policies()
	assert.True(t, slices.IsSorted(names), "%v", names)
	assert.Len(t, names, len(slices.Compact(slices.Clone(names))), "a name twice: %v", names)
	assert.Subset(t, names, []string{"kvc", "vanilla"}, "the seeds' KVC-Router and vanilla P/D")
	for _, p := range policies {
		seen := map[string]bool{}
		for _, prm := range p.params {
			assert.False(t, seen[prm.name], "%s: duplicate parameter %s", p.name, prm.name)
			seen[prm.name] = true
			assert.NotNil(t, prm.apply)
		}
		assert.NotEmpty(t, p.kinds, p.name)
		assert.NotEmpty(t, p.doc, p.name)
	}
	assert.Nil(t, lookupPolicy("nope"))
}

func TestNeverPanicsOnOddInputs(t *testing.T) {
	for _, src := range []string{
		"", "\x00", "{", "}", "router", `router "kvc" "extra" {}`, `link "p0" {}`,
		`prefill {}`, `workload "x" {}`, `variable {}`, `variable "" {}`, "variable \"v\" { default = null }\n" + minimal,
		minimal + "workload { seed = 1.5 }", minimal + "workload { time_scale = 1e400 }",
		replace(minimal, `router "kvc" {}`, `router "kvc" { rho = 1/0 }`),
		replace(minimal, `router "kvc" {}`, `router "kvc" { alpha = min() }`),
		replace(minimal, `router "kvc" {}`, `router "kvc" { epsilon = floor("x") }`),
		replace(minimal, `router "kvc" {}`, `router "kvc" { epsilon = var }`),
		replace(minimal, `router "kvc" {}`, `router "kvc" { epsilon = null }`),
		"\xff\xfe" + minimal,
	} {
		assert.NotPanics(t, func() { _, _ = Parse("odd.hcl", []byte(src), testOpts) }, "%q", src)
		spec, err := parse(newParser(), "odd.hcl", []byte(src), testOpts)
		if err == nil {
			assert.NoError(t, checkInvariants(spec), "%q", src)
		}
	}
}

// Numbers far outside the float64 range are rejected before evaluation:
// turning one into a string would take seconds (cty keeps them exactly).
func TestHugeNumbersAreCheap(t *testing.T) {
	for _, src := range []string{
		"name = 1e9999999",
		"name = \"${1e-9999999}\"",
		replace(minimal, `device    = "mlx5_0"`, `device = 1e9999999`),
		replace(minimal, `router "kvc" {}`, `router "kvc" { tau_append = floor(1e9999999) }`),
	} {
		start := time.Now()
		msg := parseErr(t, src, Options{})
		assert.Contains(t, msg, "Number out of range")
		assert.Less(t, time.Since(start), time.Second, "%q", src)
	}
	start := time.Now()
	_ = parseErr(t, minimal, Options{Vars: map[string]string{"x": "1e9999999"}})
	assert.Less(t, time.Since(start), time.Second)
}

func TestTraceReplayOptions(t *testing.T) {
	spec, err := Parse("dir/test.hcl", []byte(minimal+"workload {\n  trace = \"t\"\n  skip_bad = true\n  max_concurrent = 32\n  share_prefix = true\n  infer_sessions = true\n}\n"), Options{})
	require.NoError(t, err)
	assert.Equal(t, TraceReplay{SkipBad: true, MaxConcurrent: 32, SharePrefix: true, InferSessions: true}, spec.Workload.Replay)
}

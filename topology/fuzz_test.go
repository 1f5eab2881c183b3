package topology

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/pdemu/pdemu/scenarios"
)

// FuzzParse feeds arbitrary sources (and one -var) to the parser without
// Parse's recover: any panic is a bug. Every successful parse must satisfy
// the Spec contract.
func FuzzParse(f *testing.F) {
	for _, name := range scenarios.Names() {
		src, err := scenarios.Read(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(src), "sessions=3")
		f.Add(string(src), "router.rho=0.5")
		f.Add(string(src), "@vanilla")
	}
	f.Add("extends = \"1p3d-tcp.hcl\"\ndynamic \"link\" {\n  content {\n    latency = \"1s\"\n  }\n}\n", "decode.*.gpu=H100-SXM")
	f.Add("extends = \"fuzz.hcl\"\n", "x=1")
	f.Add("x = "+strings.Repeat("[", 100)+strings.Repeat("]", 100), "x=1")
	for _, src := range []string{
		"",
		"name = 1",
		minimal,
		minimal + "variable \"x\" { default = floor(2.5) }\n",
		strings.Replace(minimal, `router "kvc" {}`, `router "kvc" { alpha = max(1, 2) rho = 1/0 }`, 1),
		strings.Replace(minimal, `router "kvc" {}`, `router "vanilla" { block_tokens = var.x }`, 1),
		`prefill "p" { gpu = "g" model = "m" tp = 1e400 }`,
		`workload { generator "agentic" { think_time = "1h" } trace = "t" }`,
		`link "a" "b" { bandwidth = "1.5GiB/s" latency = 5 }`,
		`router "kvc" { unknown = [1, 2, {a = 3}] }`,
		`x = "${var.y}"`,
		`decode "d" { gpu = "g" model = "m" kv_budget_tokens = ceil(-0.5) }`,
		strings.Replace(minimal, `decode "d0" {`, "decode \"d0\" {\n mfu = 0.5\n mbu = 1\n comm_efficiency = 0.6\n step_overhead = \"1ms\"\n prefill_overhead = \"0\"\n allreduce_latency = \"18us\"\n reserved_memory = \"1.1GiB\"", 1),
		strings.Replace(minimal, `prefill "p0" {`, "prefill \"p0\" {\n reserved_memory = 1181116006\n mfu = 0", 1),
		strings.Replace(minimal, `bandwidth = "200Gbps"`, "bandwidth = \"200Gbps\"\n efficiency = 0.06\n max_rate = \"1.5GB/s\"\n setup = \"0\"\n fault {\n at = \"30s\"\n degrade = 0.5\n }\n fault {\n at = \"60s\"\n cut = true\n }\n fault {\n at = \"90s\"\n restore = true\n }", 1),
		`link "a" "b" { fault { at = "1s" degrade = 2 cut = false restore = true } fault {} fault "x" { at = -1 } }`,
		bucketed,
		twoBuckets,
		twoBuckets + "global_router \"bucket_score\" { load_weight = 2 }\n",
		strings.Replace(twoBuckets, "[100, 199]", "[150, 99]", 1),
		strings.Replace(twoBuckets, `["f1"]`, `["f1", "f0", "p0"]`, 1) + p0,
		fusedBlocks("w0", "w1") + "router \"cache_affinity\" {\n fan_out = 2\n meta_store_ttl = \"5s\"\n}\n",
		fusedBlocks("w0") + "router \"kvc\" {}\n",
		`bucket "a" { input_tokens = [0, null] instances = null }`,
		p0 + d0 + d1 + l00 + strings.Replace(strings.Replace(l01, `"mlx5_1"`, `"mlx5_0"`, 1), `bandwidth = "200Gbps"`, "bandwidth = \"200Gbps\"\n setup = \"1ms\"\n fault {\n at = \"1s\"\n cut = true\n }", 1) + kvc,
	} {
		f.Add(src, "x=1")
	}
	opts := Options{
		KnownGPU:   func(n string) bool { return n == "H200-SXM" || n == "g" },
		KnownModel: func(n string) bool { return n != "" },
		GPUNames:   []string{"H200-SXM", "H100-SXM", "g"},
		ModelNames: []string{"qwen3-coder-30b-a3b"},
	}
	f.Fuzz(func(t *testing.T, src, kv string) {
		o := opts
		// "k=v" is a -var; "a.b=v" a --set; "@p" a --router p.
		switch k, v, ok := strings.Cut(kv, "="); {
		case strings.HasPrefix(kv, "@"):
			o.Router = kv[1:]
		case ok && strings.Contains(k, "."):
			o.Set = []string{kv}
		case ok:
			o.Vars = map[string]string{k: v}
		}
		// Embedded, so that extends resolves in the shipped scenarios.
		spec, err := parse(hclparse.NewParser(), EmbeddedPrefix+"fuzz.hcl", []byte(src), o)
		checkParse(t, spec, err, src)
	})
}

func newParser() *hclparse.Parser { return hclparse.NewParser() }

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
	}
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
		if k, v, ok := strings.Cut(kv, "="); ok {
			o.Vars = map[string]string{k: v}
		}
		spec, err := parse(hclparse.NewParser(), "fuzz.hcl", []byte(src), o)
		if err != nil {
			de, ok := err.(*DiagError)
			if !ok {
				t.Fatalf("error is %T, not *DiagError: %v", err, err)
			}
			if len(de.Diags) == 0 || !de.Diags.HasErrors() {
				t.Fatalf("DiagError without errors")
			}
			_ = de.Error() // rendering must not panic either
			return
		}
		if err := checkInvariants(spec); err != nil {
			t.Fatalf("spec violates its contract: %v\n%s", err, src)
		}
	})
}

func newParser() *hclparse.Parser { return hclparse.NewParser() }

package topology

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclparse"
)

// checkParse fails t if err is not a well-formed *DiagError or a parsed
// spec breaks the Spec contract.
func checkParse(t *testing.T, spec *Spec, err error, src string) {
	t.Helper()
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
}

// FuzzExpression feeds arbitrary expressions (operator chains, long and
// nested expressions) to the HCL expression layer as a variable's
// default that sets the decode count and a router attribute: no panic and
// no stack overflow, a diagnostic or a valid spec.
func FuzzExpression(f *testing.F) {
	for _, e := range []string{
		"1", "-1", "--1", "!true ? 1 : 2", "1 + 2 * 3 - 4 / 5 % 6", "max(1, 2) + floor(2.5)",
		"true && false || !true", "1 == 1 ? 2 : 3", "[1, 2][0]", "{a = 1}.a", "length(range(3))",
		strings.Repeat("-", 64) + "1", strings.Repeat("-", 65) + "1", strings.Repeat("!", 1000) + "true",
		strings.Repeat("1+", 4095) + "1", strings.Repeat("1+", 4096) + "1",
		strings.Repeat("true ? 1 : ", 500) + "1", "(" + strings.Repeat("-\n", 70) + "1)",
		strings.Repeat("(", 64) + "1" + strings.Repeat(")", 64), `"${` + strings.Repeat("-", 100) + `1}"`,
		"1e400", "-0", "0.5", "null", `"x"`, "var.x", "1/0", "-(1/0)",
	} {
		f.Add(e)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		src := "variable \"x\" {\n  default = " + expr + "\n}\n" + p0 +
			"dynamic \"decode\" {\n  for_each = range(var.x)\n  labels = [\"d${decode.value}\"]\n  content {\n    gpu = \"g\"\n    model = \"m\"\n  }\n}\n" +
			"dynamic \"link\" {\n  for_each = range(var.x)\n  labels = [\"p0\", \"d${link.value}\"]\n  content {\n    bandwidth = \"200Gbps\"\n  }\n}\n" +
			"router \"kvc\" {\n  epsilon = var.x\n}\n"
		spec, err := parse(hclparse.NewParser(), "fuzz.hcl", []byte(src), fuzzOpts)
		checkParse(t, spec, err, src)
	})
}

// FuzzOverrideMerge feeds arbitrary base and override files to extends:
// no panic; a diagnostic or a valid spec; and an override that only
// extends gives the base's result.
func FuzzOverrideMerge(f *testing.F) {
	f.Add(composeBase, "dynamic \"decode\" {\n  content {\n    dynamic \"crash\" {\n      for_each = [1]\n      content {\n        at = \"1s\"\n      }\n    }\n    dynamic \"crash\" {\n      for_each = [1]\n      content {\n        at = \"2s\"\n      }\n    }\n  }\n}\n")
	f.Add(composeBase, "decode \"d0\" {\n  tp = 2\n}\ndecode \"d0\" {\n  tp = 4\n}\n")
	f.Add(composeBase, "router \"vanilla\" {}\nrouter \"kvc\" {}\n")
	f.Add(composeBase, "workload {\n  seed = 1\n}\nworkload {\n  seed = 2\n}\n")
	f.Add(composeBase, "dynamic \"link\" {\n  content {\n    fault {\n      at = \"2s\"\n      degrade = 0.5\n    }\n    fault {\n      at = \"3s\"\n      restore = true\n    }\n  }\n}\n")
	f.Add(minimal, "variable \"v\" {\n  default = 1\n}\nvariable \"v\" {\n  default = 2\n}\n")
	f.Add(minimal, "prefill \"p0\" {\n  gpu = \"g\"\n}\n")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, base, over string) {
		fsys := composeFS(map[string]string{"base.hcl": base, "over.hcl": "extends = \"base.hcl\"\n" + over})
		o := fuzzOpts
		spec, err := ParseFS(fsys, "over.hcl", o)
		checkParse(t, spec, err, over)
		fsys = composeFS(map[string]string{"base.hcl": base, "only.hcl": "extends = \"base.hcl\"\n"})
		s1, e1 := ParseFS(fsys, "only.hcl", o)
		s0, e0 := ParseFS(fsys, "base.hcl", o)
		if (e0 == nil) != (e1 == nil) {
			t.Fatalf("base alone: %v; extended without changes: %v", e0, e1)
		}
		if e0 == nil && (len(s0.Decode) != len(s1.Decode) || len(s0.Links) != len(s1.Links) || s0.Router.Policy != s1.Router.Policy) {
			t.Fatalf("an override that only extends changed the spec")
		}
	})
}

var fuzzOpts = Options{
	KnownGPU:   func(n string) bool { return n == "H200-SXM" || n == "H100-SXM" || n == "g" },
	KnownModel: func(n string) bool { return n != "" },
	GPUNames:   []string{"H200-SXM", "H100-SXM", "g"},
	ModelNames: []string{"qwen3-coder-30b-a3b"},
}

package topology

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// composeBase is a base scenario with dynamic workers and links.
const composeBase = `variable "decodes" {
  default = 2
}

prefill "p0" {
  gpu   = "H200-SXM"
  model = "qwen3-coder-30b-a3b"
}

dynamic "decode" {
  for_each = range(var.decodes)
  labels   = ["d${decode.value}"]
  content {
    gpu   = "H200-SXM"
    model = "qwen3-coder-30b-a3b"
  }
}

dynamic "link" {
  for_each = range(var.decodes)
  labels   = ["p0", "d${link.value}"]
  content {
    transport = "rdma"
    device    = "mlx5_${link.key}"
    bandwidth = "200Gbps"
    fault {
      at  = "1s"
      cut = true
    }
  }
}

router "kvc" {
  rho = 0.9
}

workload {
  seed = 3
  generator "agentic" {
    sessions = 4
    turns    = 2
  }
}
`

func composeFS(files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for name, src := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(src)}
	}
	return fsys
}

func TestDynamicBlocksExpand(t *testing.T) {
	spec, err := ParseFS(composeFS(map[string]string{"base.hcl": composeBase}), "base.hcl", testOpts)
	require.NoError(t, err)
	require.NoError(t, checkInvariants(spec))
	require.Len(t, spec.Decode, 2)
	assert.Equal(t, "d0", spec.Decode[0].Name)
	assert.Equal(t, "d1", spec.Decode[1].Name)
	require.Len(t, spec.Links, 2)
	assert.Equal(t, "mlx5_1", spec.Links[1].Device)
	assert.Equal(t, "d1", spec.Links[1].To)
	assert.Len(t, spec.Links[1].Faults, 1)

	spec, err = ParseFS(composeFS(map[string]string{"base.hcl": composeBase}), "base.hcl",
		Options{Vars: map[string]string{"decodes": "3"}})
	require.NoError(t, err)
	assert.Len(t, spec.Decode, 3)
	assert.Len(t, spec.Links, 3)
}

func TestExtendsMergeRules(t *testing.T) {
	over := `extends = "base.hcl"
name = "over"

variable "decodes" {
  default = 3
}

dynamic "link" {
  content {
    transport = "tcp"
    device    = "lo"
    fault {
      at      = "2s"
      degrade = 0.5
    }
  }
}

router "vanilla" {}

workload {
  generator "agentic" {
    turns = 5
  }
}
`
	fsys := composeFS(map[string]string{"base.hcl": composeBase, "dir/over.hcl": strings.Replace(over, `"base.hcl"`, `"../base.hcl"`, 1)})
	spec, err := ParseFS(fsys, "dir/over.hcl", testOpts)
	require.NoError(t, err)
	require.NoError(t, checkInvariants(spec))
	assert.Equal(t, "over", spec.Name, "a top-level attribute is added")
	assert.Len(t, spec.Decode, 3, "a variable's default is replaced")
	for _, l := range spec.Links {
		assert.Equal(t, TransportTCP, l.Transport, "content attributes merge")
		assert.Equal(t, "lo", l.Device)
		assert.Equal(t, 25e9, l.Bandwidth, "unmentioned attributes stay")
		require.Len(t, l.Faults, 1, "nested unlabelled blocks are replaced as a group")
		assert.Equal(t, FaultDegrade, l.Faults[0].Kind)
		assert.Equal(t, 2*time.Second, l.Faults[0].At)
	}
	assert.Equal(t, DefaultRouter("vanilla"), spec.Router, "a router with another label replaces the base's, attributes and all")
	assert.Equal(t, uint64(3), spec.Workload.Seed)
	assert.Equal(t, 4, spec.Workload.Generator.Sessions, "singleton nested blocks merge")
	assert.Equal(t, 5, spec.Workload.Generator.Turns)

	// Same label: the router's attributes merge.
	fsys["same.hcl"] = &fstest.MapFile{Data: []byte("extends = \"base.hcl\"\nrouter \"kvc\" {\n  epsilon = 4\n}\n")}
	spec, err = ParseFS(fsys, "same.hcl", testOpts)
	require.NoError(t, err)
	assert.Equal(t, 0.9, spec.Router.Rho)
	assert.Equal(t, 4, spec.Router.Epsilon)
}

// Diagnostics point at the file and line an attribute was written in: the
// override file, the base, or the content of a dynamic block.
func TestExtendsDiagnosticsPointAtTheRightFile(t *testing.T) {
	cases := []struct {
		name  string
		base  string
		over  string
		where string // "FILE:LINE:"
		want  string
	}{
		{
			name:  "bad value in the override",
			base:  composeBase,
			over:  "extends = \"base.hcl\"\n\nrouter \"kvc\" {\n  rho = 2\n}\n",
			where: "over.hcl:4:", want: `Invalid value for "rho"`,
		},
		{
			name:  "bad value in the base",
			base:  strings.Replace(composeBase, "sessions = 4", "sessions = 0", 1),
			over:  "extends = \"base.hcl\"\n",
			where: "base.hcl:" + lineOf(composeBase, "sessions = 4") + ":", want: `Invalid value for "sessions"`,
		},
		{
			name:  "bad value inside an expanded dynamic block of the base",
			base:  strings.Replace(composeBase, `bandwidth = "200Gbps"`, `bandwidth = "fast"`, 1),
			over:  "extends = \"base.hcl\"\n",
			where: "base.hcl:" + lineOf(composeBase, `bandwidth = "200Gbps"`) + ":", want: "Invalid bandwidth",
		},
		{
			name:  "bad value in an override of a dynamic block's content",
			base:  composeBase,
			over:  "extends = \"base.hcl\"\n\ndynamic \"decode\" {\n  content {\n    max_running = 0\n  }\n}\n",
			where: "over.hcl:5:", want: `Invalid value for "max_running"`,
		},
		{
			name:  "unknown attribute in an override",
			base:  composeBase,
			over:  "extends = \"base.hcl\"\n\nworkload {\n  lop = \"open\"\n}\n",
			where: "over.hcl:4:", want: `Did you mean "loop"?`,
		},
		{
			name:  "missing base",
			base:  composeBase,
			over:  "# x\nextends = \"nope.hcl\"\n",
			where: "over.hcl:2:", want: "Cannot read the base scenario",
		},
		{
			name:  "cycle",
			base:  "extends = \"over.hcl\"\n",
			over:  "extends = \"base.hcl\"\n",
			where: "base.hcl:1:", want: "Cyclic extends",
		},
		{
			name:  "extends is not a literal",
			base:  composeBase,
			over:  "variable \"b\" {\n  default = \"base.hcl\"\n}\nextends = var.b\n",
			where: "over.hcl:4:", want: "Invalid extends",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseFS(composeFS(map[string]string{"base.hcl": tc.base, "over.hcl": tc.over}), "over.hcl", testOpts)
			require.Error(t, err)
			var de *DiagError
			require.True(t, errors.As(err, &de), "%T: %v", err, err)
			assert.Contains(t, err.Error(), tc.where)
			assert.Contains(t, flat(err.Error()), tc.want)
			// The file:line prefix and the message belong to one diagnostic.
			found := false
			for _, d := range de.Diags {
				if d.Subject != nil && strings.HasPrefix(tc.where, d.Subject.Filename+":"+strconv.Itoa(d.Subject.Start.Line)+":") {
					found = true
				}
			}
			assert.True(t, found, "no diagnostic at %s in\n%s", tc.where, err)
			assert.Len(t, de.Diags, 1, "one diagnostic, even for an attribute of a block generated twice:\n%s", err)
		})
	}
}

func lineOf(src, s string) string {
	i := strings.Index(src, s)
	if i < 0 {
		panic(s)
	}
	return strconv.Itoa(strings.Count(src[:i], "\n") + 1)
}

// A file on disk may extend another on disk (relative to its directory)
// or an embedded scenario.
func TestExtendsOnDisk(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "base.hcl"), []byte(composeBase), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.hcl"), []byte("extends = \"base.hcl\"\nname = \"a\"\n"), 0o644))
	spec, err := Load(filepath.Join(dir, "a.hcl"), testOpts)
	require.NoError(t, err)
	assert.Equal(t, "a", spec.Name)
	assert.Len(t, spec.Decode, 2)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.hcl"), []byte("extends = \"<embedded>/1p3d-tcp.hcl\"\nname = \"b\"\nrouter \"kvc\" {\n  tau_append = 4096\n}\n"), 0o644))
	spec, err = Load(filepath.Join(dir, "b.hcl"), testOpts)
	require.NoError(t, err)

	// A copied scenario that still extends an embedded one by its bare
	// name is told how to name it.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "c.hcl"), []byte("extends = \"1p3d-mlx5.hcl\"\n"), 0o644))
	_, err = Load(filepath.Join(dir, "c.hcl"), testOpts)
	require.Error(t, err)
	assert.Contains(t, flat(err.Error()), `write extends = "<embedded>/1p3d-mlx5.hcl"`)
	spec, err = Load(filepath.Join(dir, "b.hcl"), testOpts)
	require.NoError(t, err)
	assert.Equal(t, "b", spec.Name)
	assert.Equal(t, 4096, spec.Router.TauAppend)
	assert.True(t, spec.Router.NetCapacity, "from 1p3d-mlx5.hcl, two levels up")
	assert.Equal(t, TransportTCP, spec.Links[0].Transport, "from 1p3d-tcp.hcl")
	assert.Equal(t, 92104, spec.Decode[2].KVBudgetTokens)
}

// Input bounds are checked before HCL parses the file: deep nesting is a
// diagnostic, never a stack overflow.
func TestSourceBounds(t *testing.T) {
	deep := "x = " + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + "\n"
	msg := parseErr(t, deep, Options{})
	assert.Contains(t, msg, "Scenario nested too deeply")
	assert.Contains(t, msg, "test.hcl:1:")

	deepBlocks := strings.Repeat("a {\n", 100_000)
	assert.Contains(t, parseErr(t, deepBlocks, Options{}), "nested too deeply")

	interp := `name = "` + strings.Repeat("${", 1000) + "1" + strings.Repeat("}", 1000) + `"`
	assert.Contains(t, parseErr(t, interp, Options{}), "nested too deeply")

	big := minimal + "\n#" + strings.Repeat("x", MaxSourceBytes) + "\n"
	assert.Contains(t, parseErr(t, big, Options{}), "Scenario file too large")

	// The limit leaves room for real scenarios.
	ok := minimal + "\nname = " + strings.Repeat("(", 20) + `"x"` + strings.Repeat(")", 20) + "\n"
	mustParse(t, ok, Options{})

	// setproduct is bounded (a full mesh of 256 × 256 workers at most).
	msg = parseErr(t, minimal+"\nvariable \"big\" {\n  default = setproduct(range(1000), range(1000))\n}\n", Options{})
	assert.Contains(t, msg, "more than 65536 elements")
}

func TestExtendsRefusesNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.hcl"), []byte("extends = \"/dev/zero\"\n"), 0o644))
	_, err := Load(filepath.Join(dir, "a.hcl"), testOpts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a regular file")
}

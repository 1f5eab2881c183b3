package topology

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// meshWorkers declares P prefill and D decode workers as dynamic blocks.
func meshWorkers(p, d int) string {
	return fmt.Sprintf(`
dynamic "prefill" {
  for_each = range(%d)
  labels   = ["p${prefill.value}"]
  content {
    gpu   = "H200-SXM"
    model = "qwen3-coder-30b-a3b"
  }
}
dynamic "decode" {
  for_each = range(%d)
  labels   = ["d${decode.value}"]
  content {
    gpu   = "H200-SXM"
    model = "qwen3-coder-30b-a3b"
  }
}
router "kvc" {}
`, p, d)
}

// dynamicLinks is the dynamic "link" block over setproduct that base/pd.hcl
// used before the mesh: one link p{i} -> d{j} per pair, each with attrs.
func dynamicLinks(p, d int, attrs string) string {
	return fmt.Sprintf(`
dynamic "link" {
  for_each = setproduct(range(%d), range(%d))
  labels   = ["p${link.value[0]}", "d${link.value[1]}"]
  content {%s
  }
}
`, p, d, attrs)
}

// The mesh gives exactly the links the dynamic block over setproduct gave
// (same order, same attributes): base/pd.hcl's switch changes no run.
func TestMeshEqualsDynamicLinks(t *testing.T) {
	dyn := meshWorkers(3, 5) + dynamicLinks(3, 5, `
    transport = "tcp"
    device    = "mlx5_${link.value[1]}"
    bandwidth = "200Gbps"
    latency   = "7us"
    max_rate  = "10GB/s"`)
	mesh := meshWorkers(3, 5) + `
mesh {
  transport = "tcp"
  device    = "mlx5_${link.decode_index}"
  bandwidth = "200Gbps"
  latency   = "7us"
  max_rate  = "10GB/s"
}
`
	a, b := mustParse(t, dyn, Options{}), mustParse(t, mesh, Options{})
	require.Len(t, b.Links, 15)
	assert.Equal(t, a.Links, b.Links)
	na, err := a.NICs()
	require.NoError(t, err)
	nb, err := b.NICs()
	require.NoError(t, err)
	assert.Equal(t, na, nb)
}

func TestMesh(t *testing.T) {
	t.Run("link blocks take their pairs; the mesh the rest", func(t *testing.T) {
		s := mustParse(t, meshWorkers(2, 2)+`
link "p1" "d0" {
  transport = "rdma"
  device    = "own"
  bandwidth = "100Gbps"
}
mesh {
  transport = "rdma"
  device    = "${link.prefill}-to-${link.decode}"
  bandwidth = "200Gbps"
}
`, Options{})
		var got []string
		for _, l := range s.Links {
			got = append(got, fmt.Sprintf("%s>%s@%s/%g", l.From, l.To, l.Device, l.Bandwidth*8/1e9))
		}
		assert.Equal(t, []string{"p1>d0@own/100", "p0>d0@p0-to-d0/200", "p0>d1@p0-to-d1/200", "p1>d1@p1-to-d1/200"}, got)
	})
	t.Run("a constant device is one NIC per prefill worker", func(t *testing.T) {
		s := mustParse(t, meshWorkers(2, 3)+"mesh {\n  transport = \"rdma\"\n  device = \"mlx5_0\"\n  bandwidth = \"400Gbps\"\n}\n", Options{})
		nics, err := s.NICs()
		require.NoError(t, err)
		require.Len(t, nics, 2)
		assert.Equal(t, []int{0, 1, 2}, nics[0].Links)
	})
	t.Run("--set reaches the mesh", func(t *testing.T) {
		s := mustParse(t, meshWorkers(1, 2)+"mesh {\n  transport = \"rdma\"\n  device = \"mlx5_${link.decode_index}\"\n  bandwidth = \"400Gbps\"\n}\n",
			Options{Set: []string{"mesh.bandwidth=100Gbps", `mesh.device="lo"`}})
		assert.Equal(t, 12.5e9, s.Links[1].Bandwidth)
		assert.Equal(t, "lo", s.Links[1].Device)
	})
	for _, c := range []struct {
		name, src string
		want      []string
	}{
		{"unknown variable", meshWorkers(1, 1) + "mesh {\n  transport = \"rdma\"\n  device = \"mlx5_${link.decode_idx}\" #!\n  bandwidth = \"200Gbps\"\n}\n",
			[]string{"Unknown mesh variable", `"link.decode_idx"`, `Did you mean "decode_index"?`}},
		{"bad transport, once", meshWorkers(2, 2) + "mesh {\n  transport = \"rdmx\" #!\n  device = \"x\"\n  bandwidth = \"200Gbps\"\n}\n",
			[]string{"Invalid transport", `Did you mean "rdma"?`}},
		{"empty device", meshWorkers(1, 1) + "mesh {\n  transport = \"rdma\"\n  device = \"\" #!\n  bandwidth = \"200Gbps\"\n}\n",
			[]string{"Empty NIC device"}},
		{"two meshes", meshWorkers(1, 1) + "mesh {\n  transport = \"rdma\"\n  device = \"a\"\n  bandwidth = \"200Gbps\"\n}\nmesh { #!\n  transport = \"rdma\"\n  device = \"a\"\n  bandwidth = \"200Gbps\"\n}\n",
			[]string{"Duplicate mesh block"}},
		{"a link block and the mesh disagree on a NIC", meshWorkers(1, 2) + "link \"p0\" \"d0\" {\n  transport = \"rdma\"\n  device = \"nic\"\n  bandwidth = \"100Gbps\"\n}\nmesh { #!\n  transport = \"rdma\"\n  device = \"nic\"\n  bandwidth = \"200Gbps\"\n}\n",
			[]string{"Inconsistent NIC bandwidth", `link "p0" "d0"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkMarkedDiag(t, c.src, Options{}, c.want)
		})
	}
}

// 256P768D in full mesh parses in well under a second: the 196,608 links
// are built in Go, not enumerated in HCL (where setproduct stops at 65,536).
func TestMeshBigCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("196,608 links")
	}
	s := mustParse(t, meshWorkers(256, 768)+"mesh {\n  transport = \"rdma\"\n  device = \"mlx5_${link.decode_index}\"\n  bandwidth = \"200Gbps\"\n}\n", Options{})
	require.Len(t, s.Links, 256*768)
	assert.Equal(t, Link{From: "p255", To: "d767", Transport: TransportRDMA, Device: "mlx5_767", Bandwidth: 25e9, Latency: DefaultLatency}, s.Links[len(s.Links)-1])
	nics, err := s.NICs()
	require.NoError(t, err)
	assert.Len(t, nics, 256*768)
}

func BenchmarkMesh64P192D(b *testing.B) {
	src := []byte(meshWorkers(64, 192) + "mesh {\n  transport = \"rdma\"\n  device = \"mlx5_${link.decode_index}\"\n  bandwidth = \"200Gbps\"\n}\n")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("bench.hcl", src, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// The dynamic "link" over setproduct that base/pd.hcl used before the
// mesh, for the ratio (BenchmarkMesh64P192D).
func BenchmarkDynamicLinks64P192D(b *testing.B) {
	src := []byte(meshWorkers(64, 192) + dynamicLinks(64, 192, `
    transport = "rdma"
    device    = "mlx5_${link.value[1]}"
    bandwidth = "200Gbps"`))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("bench.hcl", src, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

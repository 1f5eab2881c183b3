package metrics

import (
	"bytes"
	"encoding/csv"
	"math"
	"sort"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// linkSample is one change point of a NIC (a row of links.csv).
type linkSample struct {
	T             time.Duration
	NIC           string
	BytesInFlight int64
	Rate          float64 // bytes/s being moved now (all transfers)
	Active        int     // transfers in flight
}

// refLinks is LinkRecorder as it was before the compact rows: every row a
// 32-byte struct, links.csv by a stable sort of an index of them.
type refLinks struct {
	capBps  map[string]float64
	last    map[string]linkSample
	pts     []linkSample
	dropped int
	max     int
}

func (r *refLinks) Link(now time.Duration, nic string, inFlight int64, rate float64, active int) {
	s := linkSample{T: now, NIC: nic, BytesInFlight: inFlight, Rate: rate, Active: active}
	if l, ok := r.last[nic]; ok && l.BytesInFlight == inFlight && l.Rate == rate && l.Active == active {
		return
	}
	r.last[nic] = s
	for i := len(r.pts) - 1; i >= 0 && r.pts[i].T == now; i-- {
		if r.pts[i].NIC == nic {
			r.pts[i] = s
			return
		}
	}
	if len(r.pts) >= MaxLinkRows || r.max > 0 && len(r.pts) >= r.max {
		r.dropped++
		return
	}
	r.pts = append(r.pts, s)
}

func (r *refLinks) write(w *bytes.Buffer) error {
	return writeCSV(w, LinksHeader, func(cw *csv.Writer) error {
		idx := make([]int, len(r.pts))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(i, j int) bool {
			a, b := r.pts[idx[i]], r.pts[idx[j]]
			if a.T != b.T {
				return a.T < b.T
			}
			return a.NIC < b.NIC
		})
		for _, i := range idx {
			p := r.pts[i]
			util := ""
			if c := r.capBps[p.NIC]; c > 0 {
				util = strconv.FormatFloat(p.Rate/c, 'f', 4, 64)
			}
			if err := cw.Write([]string{fms(p.T), p.NIC, strconv.FormatInt(p.BytesInFlight, 10),
				strconv.FormatFloat(p.Rate*8/1e9, 'f', 3, 64), strconv.Itoa(p.Active), util}); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestLinksEqualReference: the compact recorder writes the links.csv and
// counts the rows the struct-per-row one did, for changes in time order
// and out of it, at shared instants, repeated, replaced, bit-distinct
// rates (-0, NaN, tiny differences) and a row bound.
func TestLinksEqualReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := NewLinkRecorder()
		ref := &refLinks{capBps: map[string]float64{}, last: map[string]linkSample{}}
		nics := []string{"p0/mlx5_0", "d1/mlx5_0", "a", "b b", " lead", `q"uote`, "com,ma", `\.`, "", "new\nline"}
		ids := map[string]LinkID{}
		declared := rapid.IntRange(0, len(nics)).Draw(t, "caps")
		for _, n := range nics[:declared] {
			c := float64(rapid.IntRange(0, 3).Draw(t, "cap")) * 25e9
			ids[n] = r.NIC(n, c)
			ref.capBps[n] = c
		}
		for _, n := range nics[declared:] {
			ids[n] = r.NIC(n, 0) // no line rate: no utilisation, as for the reference
		}
		if rapid.Bool().Draw(t, "bounded") {
			m := rapid.IntRange(1, 40).Draw(t, "max")
			r.SetMaxRows(m)
			ref.max = m
		}
		rates := []float64{0, math.Copysign(0, -1), 2e10, 2e10 + 1e-5, 1e10 / 3, math.NaN(), math.Inf(1)}
		backwards := rapid.IntRange(0, 20).Draw(t, "backwards") == 0
		now := time.Duration(0)
		for range rapid.IntRange(0, 400).Draw(t, "n") {
			switch rapid.IntRange(0, 4).Draw(t, "step") {
			case 0, 1: // same instant
			case 2:
				if backwards {
					now -= time.Duration(rapid.Int64Range(0, 5e6).Draw(t, "back"))
					break
				}
				fallthrough
			default:
				now += time.Duration(rapid.Int64Range(1, 5e9).Draw(t, "dt"))
			}
			nic := rapid.SampledFrom(nics).Draw(t, "nic")
			inFlight := rapid.Int64Range(-1, 1<<40).Draw(t, "inflight") % rapid.SampledFrom([]int64{3, 1 << 41}).Draw(t, "mod")
			rate := rapid.SampledFrom(rates).Draw(t, "rate")
			active := rapid.IntRange(0, 4).Draw(t, "active")
			r.Link(now, ids[nic], inFlight, rate, active)
			ref.Link(now, nic, inFlight, rate, active)
		}
		if got, want := linksCSVs(t, r, ref); got != want {
			t.Fatalf("links.csv\n got %s\nwant %s", got, want)
		}
		if n, d := r.Rows(); n != len(ref.pts) || d != ref.dropped {
			t.Fatalf("rows %d dropped %d, want %d %d", n, d, len(ref.pts), ref.dropped)
		}
	})
}

// linksCSVs is links.csv as WriteLinks writes r and as the reference
// writes ref.
func linksCSVs(t interface{ Fatal(...any) }, r *LinkRecorder, ref *refLinks) (got, want string) {
	var g, w bytes.Buffer
	if err := WriteLinks(&g, r); err != nil {
		t.Fatal(err)
	}
	if err := ref.write(&w); err != nil {
		t.Fatal(err)
	}
	return g.String(), w.String()
}

// TestLinksManyRates: past WriteLinks' bound on the rate columns each NIC
// remembers (16), rows are still written as the reference writes them.
func TestLinksManyRates(t *testing.T) {
	r := NewLinkRecorder()
	ref := &refLinks{capBps: map[string]float64{}, last: map[string]linkSample{}}
	var ids []LinkID
	for _, n := range []string{"a", "b"} {
		ids = append(ids, r.NIC(n, 25e9))
		ref.capBps[n] = 25e9
	}
	for i := range 10000 {
		now, nic, rate := time.Duration(i)*time.Millisecond, []string{"a", "b"}[i%2], float64(i%6000)*1e7/3
		r.Link(now, ids[i%2], int64(i), rate, i%3)
		ref.Link(now, nic, int64(i), rate, i%3)
	}
	if got, want := linksCSVs(t, r, ref); got != want {
		t.Fatal("links.csv differs from the reference")
	}
}

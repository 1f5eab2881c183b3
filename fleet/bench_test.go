package fleet_test

import (
	"testing"

	"github.com/pdemu/pdemu/fleet"
)

// BenchmarkHandoff is one P/D hand-off through the core: a prefill call
// with RemoteDecode, the decode call that pulls its KV, both run to their
// end, with the KV events of both workers.
func BenchmarkHandoff(b *testing.B) {
	f, err := fleet.New(spec(b), fleet.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var outs []fleet.Out
	b.ReportAllocs()
	id := int64(0)
	for i := range b.N {
		if err := f.Submit(f.Now(), remotePrefill(req(id, int32(i), 0, 40, 10))); err != nil {
			b.Fatal(err)
		}
		outs = outs[:0]
		run(f, &outs)
		var h *fleet.Handoff
		for _, o := range outs {
			if o.Kind == fleet.OutDone {
				h = o.Handoff
			}
		}
		if h == nil {
			b.Fatal("no hand-off")
		}
		if err := f.Submit(f.Now(), fleet.Call{Worker: "d1", Req: req(id+1, int32(i), 0, 40, 10), Pull: h}); err != nil {
			b.Fatal(err)
		}
		outs = outs[:0]
		run(f, &outs)
		f.Ended()
		id += 2
	}
}

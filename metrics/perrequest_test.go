package metrics

import (
	"bytes"
	"encoding/csv"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// referenceRow is per_request.csv's row as the code before the column
// table built it (fields as strings for encoding/csv); the append encoder
// must write the same bytes.
func referenceRow(r *Record) []string {
	fms := func(d time.Duration) string {
		if d < 0 {
			return ""
		}
		return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64)
	}
	row := []string{
		strconv.FormatInt(r.ID, 10), r.Session, strconv.Itoa(r.Turn), fms(r.Arrival),
		fms(r.TTFT), fms(r.E2E), r.Mode, r.Reason, r.P, r.D,
		strconv.Itoa(r.InputTokens), strconv.Itoa(r.OutputTokens), strconv.Itoa(r.AppendTokens),
		strconv.Itoa(r.CachedTokens), strconv.FormatInt(r.TransferBytes, 10), strconv.Itoa(r.Tries),
		strconv.FormatBool(r.Failed), r.Bucket, r.BucketPolicy, "", "",
	}
	if r.Bucket != "" {
		row[19], row[20] = strconv.FormatBool(r.LengthBucketMatch), strconv.Itoa(r.BucketPredictedPrefix)
	}
	for _, d := range r.Parts.Slice() {
		if r.HasParts {
			row = append(row, strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64))
		} else {
			row = append(row, "")
		}
	}
	st := r.State
	if st == "" {
		st = StateCompleted
		if r.Failed {
			st = StateFailed
		}
	}
	return append(row, fms(r.TPOT), st, r.KVCause)
}

// text draws strings that exercise CSV quoting: commas, quotes, CR/LF,
// leading (Unicode) spaces, `\.`, multi-byte runes.
func text(t *rapid.T, label string) string {
	return rapid.OneOf(
		rapid.SampledFrom([]string{"", "s1", `\.`, " lead", "\u00a0nbsp", "a,b", `q"uote`, "cr\rlf\n", "\u2028x", "é,\"", "in route;no-d-capacity"}),
		rapid.StringOf(rapid.SampledFrom([]rune{'a', ',', '"', ' ', '\t', '\r', '\n', '\\', '.', 'é', '\u3000', ';'})),
	).Draw(t, label)
}

func drawRecord(t *rapid.T) Record {
	dur := func(label string) time.Duration {
		return time.Duration(rapid.Int64Range(-5e12, 5e12).Draw(t, label))
	}
	r := Record{
		ID: rapid.Int64Range(0, 1<<40).Draw(t, "id"), Session: text(t, "session"), Turn: rapid.IntRange(0, 500).Draw(t, "turn"),
		Arrival: dur("arrival"), TTFT: dur("ttft"), E2E: dur("e2e"), Mode: text(t, "mode"), Reason: text(t, "reason"),
		Failed: rapid.Bool().Draw(t, "failed"), P: text(t, "p"), D: text(t, "d"),
		InputTokens: rapid.IntRange(-1, 1<<20).Draw(t, "in"), OutputTokens: rapid.IntRange(0, 1<<16).Draw(t, "out"),
		AppendTokens: rapid.Int().Draw(t, "append"), CachedTokens: rapid.Int().Draw(t, "cached"),
		TransferBytes: rapid.Int64().Draw(t, "bytes"), Tries: rapid.IntRange(0, 9).Draw(t, "tries"),
		Bucket: text(t, "bucket"), BucketPolicy: text(t, "bpolicy"), LengthBucketMatch: rapid.Bool().Draw(t, "match"),
		BucketPredictedPrefix: rapid.IntRange(0, 1<<20).Draw(t, "pred"),
		State:                 rapid.SampledFrom([]string{"", StateCompleted, StateFailed, StateUnfinished}).Draw(t, "state"),
		HasParts:              rapid.Bool().Draw(t, "hasParts"), TPOT: dur("tpot"), KVCause: text(t, "kvCause"),
	}
	r.Parts = TTFTParts{dur("p0"), dur("p1"), dur("p2"), dur("p3"), dur("p4"), dur("p5"), dur("p6")}
	return r
}

// TestAppendPerRequestRowMatchesCSV: the column table's encoder writes,
// for any record, the bytes encoding/csv writes for the reference row,
// and WritePerRequest's blocks are the rows concatenated.
func TestAppendPerRequestRowMatchesCSV(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		recs := rapid.SliceOfN(rapid.Custom(drawRecord), 1, 5).Draw(t, "recs")
		var want bytes.Buffer
		cw := csv.NewWriter(&want)
		require.NoError(t, cw.Write(PerRequestHeader))
		var got []byte
		for i := range recs {
			require.NoError(t, cw.Write(referenceRow(&recs[i])))
			got = AppendPerRequestRow(got, &recs[i])
		}
		cw.Flush()
		var file bytes.Buffer
		require.NoError(t, WritePerRequest(&file, recs))
		assert.Equal(t, want.String(), file.String())
		assert.Equal(t, want.String(), string(AppendPerRequestHeader(nil))+string(got))
	})
}

// TestWritePerRequestBlocks: rows spanning several blocks are all
// written, in order.
func TestWritePerRequestBlocks(t *testing.T) {
	recs := make([]Record, 8*perRequestBlock/100)
	var want []byte
	want = AppendPerRequestHeader(want)
	for i := range recs {
		recs[i] = Record{ID: int64(i), Session: "s", TTFT: -1, E2E: -1, TPOT: -1}
		want = AppendPerRequestRow(want, &recs[i])
	}
	var w countingWriter
	require.NoError(t, WritePerRequest(&w, recs))
	assert.Equal(t, string(want), w.buf.String())
	assert.Greater(t, w.writes, 2, "written in blocks")
}

// TestAppendMSMatchesFloat: the integer fast path writes what
// strconv.AppendFloat writes, ties and the limits included.
func TestAppendMSMatchesFloat(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := time.Duration(rapid.OneOf(
			rapid.Int64(),
			rapid.Int64Range(-1<<51, 1<<51),
			rapid.Map(rapid.Int64Range(-2e12, 2e12), func(v int64) int64 { return v/1000*1000 + 500 }),
			rapid.Int64Range(-2000, 2000),
		).Draw(t, "d"))
		want := strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64)
		assert.Equal(t, want, string(appendMSSigned(nil, d)), "%d ns", int64(d))
	})
	for _, d := range []time.Duration{0, -1, 1, 499, 500, 501, 502, -500, -502, 1<<50 - 1, 1 << 50, -(1<<50 - 1), 1<<63 - 1, -1 << 63} {
		assert.Equal(t, strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64), string(appendMSSigned(nil, d)), "%d ns", int64(d))
	}
}

type countingWriter struct {
	buf    bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.buf.Write(p)
}

func sampleRecord() Record {
	return Record{
		ID: 123456, Session: "swe-bench-42", Turn: 17, Arrival: 123456789012, TTFT: 45678901, E2E: 2345678901,
		Mode: "Direct", P: "", D: "d2", InputTokens: 43210, OutputTokens: 512, AppendTokens: 1234, CachedTokens: 41976,
		Tries: 1, HasParts: true, Parts: TTFTParts{1000, 0, 0, 0, 2000, 30000000, 15675901}, TPOT: 4500000, State: StateCompleted,
	}
}

// BenchmarkPerRequestRow: one row through the column table (ns/row,
// B/row = bytes written per request).
func BenchmarkPerRequestRow(b *testing.B) {
	r := sampleRecord()
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		buf = AppendPerRequestRow(buf[:0], &r)
	}
	b.ReportMetric(float64(len(buf)), "B/row")
}

// BenchmarkPerRequestRowCSV is the encoder before the table: the
// reference row through encoding/csv (kept to compare with).
func BenchmarkPerRequestRowCSV(b *testing.B) {
	r := sampleRecord()
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		_ = cw.Write(referenceRow(&r))
		cw.Flush()
	}
	b.ReportMetric(float64(buf.Len()), "B/row")
}

// TestAppendCSVFieldEveryLead: appendCSVField quotes as encoding/csv does
// whatever a field's first character is (every ASCII byte, Unicode spaces
// and others), alone and followed by plain text or a byte that forces
// quotes.
func TestAppendCSVFieldEveryLead(t *testing.T) {
	var leads []string
	for c := 0; c < 0x80; c++ {
		leads = append(leads, string(rune(c)))
	}
	leads = append(leads, "\u0085", "\u00a0", "\u1680", "\u2028", "\u3000", "é", "日", "\xff", `\`, `\.`)
	for _, lead := range leads {
		for _, rest := range []string{"", "x", ".", " a", ",", `"`, "\r", "\n", "é"} {
			s := lead + rest
			var want bytes.Buffer
			cw := csv.NewWriter(&want)
			require.NoError(t, cw.Write([]string{s, "z"}))
			cw.Flush()
			got := string(appendCSVField(nil, s)) + ",z\n"
			assert.Equal(t, want.String(), got, "%q", s)
		}
	}
}

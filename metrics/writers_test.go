package metrics

import (
	"bytes"
	"encoding/csv"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// refEvictionRow and refWriteSessions are evictions.csv's row and
// sessions.csv as they were written before the append encoders: through
// encoding/csv. The encoders must write the same bytes.
func refEvictionRow(cw *csv.Writer, r EvictionRow) error {
	forReq := ""
	if r.For >= 0 {
		forReq = strconv.FormatInt(r.For, 10)
	}
	return cw.Write([]string{fms(r.At), r.Worker, r.Session, strconv.Itoa(r.Tokens), r.Cause, forReq})
}

func refWriteSessions(w *bytes.Buffer, rows []SessionRow) error {
	return writeCSV(w, []string{"session", "requests", "direct", "migrations", "blacklists", "fallbacks", "rejections"}, func(cw *csv.Writer) error {
		for _, r := range rows {
			if err := cw.Write([]string{r.Session, strconv.Itoa(r.Requests), strconv.Itoa(r.Direct), strconv.Itoa(r.Migrations),
				strconv.Itoa(r.Blacklists), strconv.Itoa(r.Fallbacks), strconv.Itoa(r.Rejections)}); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestEvictionsEqualReference: WriteEvictions and AppendEvictionRow write
// what encoding/csv wrote, for any row (quoting, negative times and
// tokens, no request).
func TestEvictionsEqualReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rows := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) EvictionRow {
			return EvictionRow{
				At:     time.Duration(rapid.Int64Range(-5e12, 5e12).Draw(t, "at")),
				Worker: text(t, "worker"), Session: text(t, "session"),
				Tokens: rapid.IntRange(-1, 1<<30).Draw(t, "tokens"), Cause: text(t, "cause"),
				For: rapid.Int64Range(-3, 1<<40).Draw(t, "for"),
			}
		}), 0, 6).Draw(t, "rows")
		var want bytes.Buffer
		cw := csv.NewWriter(&want)
		if err := cw.Write(EvictionsHeader); err != nil {
			t.Fatal(err)
		}
		appended := AppendEvictionsHeader(nil)
		for _, r := range rows {
			if err := refEvictionRow(cw, r); err != nil {
				t.Fatal(err)
			}
			appended = AppendEvictionRow(appended, r)
		}
		cw.Flush()
		var got bytes.Buffer
		if err := WriteEvictions(&got, rows); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() || string(appended) != want.String() {
			t.Fatalf("evictions.csv\n got %q\nappended %q\nwant %q", got.String(), appended, want.String())
		}
	})
}

// TestSessionsEqualReference: WriteSessions writes what encoding/csv
// wrote.
func TestSessionsEqualReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := func(label string) int { return rapid.IntRange(-2, 1<<20).Draw(t, label) }
		rows := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) SessionRow {
			return SessionRow{Session: text(t, "session"), Requests: n("req"), Direct: n("direct"), Migrations: n("mig"),
				Blacklists: n("bl"), Fallbacks: n("fb"), Rejections: n("rej")}
		}), 0, 6).Draw(t, "rows")
		var got, want bytes.Buffer
		if err := WriteSessions(&got, rows); err != nil {
			t.Fatal(err)
		}
		if err := refWriteSessions(&want, rows); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("sessions.csv\n got %q\nwant %q", got.String(), want.String())
		}
	})
}

// refWindowRows is router_windows.csv's rows as they were written before
// the append encoder: through encoding/csv.
func refWindowRows(w *bytes.Buffer, rows []windowRow, window time.Duration) error {
	return writeCSV(w, RouterWindowsHeader, func(cw *csv.Writer) error {
		for i, x := range rows {
			share := ""
			if x.req > 0 {
				share = strconv.FormatFloat(float64(x.direct)/float64(x.req), 'f', 4, 64)
			}
			if err := cw.Write([]string{fms(time.Duration(i) * window), fms(window), strconv.Itoa(x.req), strconv.Itoa(x.direct),
				strconv.Itoa(x.mig), strconv.Itoa(x.bl), strconv.Itoa(x.fb), strconv.Itoa(x.rej), share}); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestWindowRowsEqualReference: writeWindowRows writes what encoding/csv
// wrote, shares and empty windows included.
func TestWindowRowsEqualReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := func(label string) int { return rapid.IntRange(-1, 1<<20).Draw(t, label) }
		rows := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) windowRow {
			return windowRow{req: rapid.IntRange(-1, 50).Draw(t, "req"), direct: rapid.IntRange(0, 50).Draw(t, "direct"),
				mig: n("mig"), bl: n("bl"), fb: n("fb"), rej: n("rej")}
		}), 0, 8).Draw(t, "rows")
		window := time.Duration(rapid.IntRange(1, 3600).Draw(t, "window")) * time.Second
		var got, want bytes.Buffer
		if err := writeWindowRows(&got, rows, window); err != nil {
			t.Fatal(err)
		}
		if err := refWindowRows(&want, rows, window); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("router_windows.csv\n got %q\nwant %q", got.String(), want.String())
		}
	})
}

package metrics

import "time"

// ClientTimes are what the HTTP client of one request of a served run saw,
// in wall time from the request's arrival at the server (its handler
// started): when the first token's bytes were written to it, when the
// response's last byte was, and how late what it waited for came compared
// with the emulated times scaled to wall time (Late: a stream's first
// token, client TTFT − emulated TTFT / time scale; a non-streamed
// response, which carries its first token with the rest, client E2E −
// emulated E2E / time scale). A Has flag is false when the client never
// got that event (a failure before the first token, a client that went
// away); its column is then empty.
type ClientTimes struct {
	TTFT, E2E, Late          time.Duration
	HasTTFT, HasE2E, HasLate bool
}

// ClientColumn is one of the columns a served run adds to per_request.csv,
// after PerRequestColumns: its name, unit (as docs/OUTPUTS.md states it)
// and the appending of its field to a row.
type ClientColumn struct {
	Name   string
	Unit   string
	Append func(b []byte, c *ClientTimes) []byte
}

// ClientColumns are the served-run columns of per_request.csv, in file
// order (output.StreamOptions.Client writes them; `pdemu run` has none).
var ClientColumns = []ClientColumn{
	{"client_ttft_ms", "ms", func(b []byte, c *ClientTimes) []byte { return appendIf(b, c.HasTTFT, c.TTFT) }},
	{"client_e2e_ms", "ms", func(b []byte, c *ClientTimes) []byte { return appendIf(b, c.HasE2E, c.E2E) }},
	{"client_late_ms", "ms", func(b []byte, c *ClientTimes) []byte { return appendIf(b, c.HasLate, c.Late) }},
}

func appendIf(b []byte, ok bool, d time.Duration) []byte {
	if !ok {
		return b
	}
	return appendMSSigned(b, d)
}

// AppendClientHeader appends ",name" for each of ClientColumns to b.
func AppendClientHeader(b []byte) []byte {
	for _, c := range ClientColumns {
		b = append(b, ',')
		b = appendCSVField(b, c.Name)
	}
	return b
}

// AppendClientFields appends ",field" for each of ClientColumns to b (c
// nil: every field empty).
func AppendClientFields(b []byte, c *ClientTimes) []byte {
	if c == nil {
		c = &ClientTimes{}
	}
	for i := range ClientColumns {
		b = append(b, ',')
		b = ClientColumns[i].Append(b, c)
	}
	return b
}

// ClientLateness summarises the client_late_ms column of a served run
// (wall ms; quantiles over up to 65,536 sampled requests, count and
// maximum exact).
type ClientLateness struct {
	P50     float64 `json:"p50"`
	P90     float64 `json:"p90"`
	P99     float64 `json:"p99"`
	Max     float64 `json:"max"`
	Samples int     `json:"samples"`
}

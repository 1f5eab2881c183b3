// Package appendnum appends integers as decimal text for the output
// encoders (the routing log in cluster, the CSV writers in metrics).
//
// Contract: Int(b, n) is strconv.AppendInt(b, n, 10), byte for byte; the
// one- and two-digit values most output fields hold (turns, tries,
// overlaps, small counts) are written inline instead of through strconv.
package appendnum

import "strconv"

// Int appends n's decimal digits to b.
func Int(b []byte, n int64) []byte {
	u := n
	if u < 0 {
		u = -u
	}
	if u >= 100 || u < 0 { // u < 0: n is MinInt64
		return strconv.AppendInt(b, n, 10)
	}
	if n < 0 {
		b = append(b, '-')
	}
	if u < 10 {
		return append(b, byte('0'+u))
	}
	return append(b, byte('0'+u/10), byte('0'+u%10))
}

package varint

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestMatchesBinary: any bytes decode as encoding/binary decodes them,
// well-formed varints of every length followed by anything, or not.
func TestMatchesBinary(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var b []byte
		if rapid.Bool().Draw(t, "encoded") {
			shift := rapid.IntRange(0, 63).Draw(t, "shift")
			v := rapid.Uint64().Draw(t, "v") >> shift
			b = binary.AppendUvarint(nil, v)
		}
		b = append(b, rapid.SliceOf(rapid.Byte()).Draw(t, "rest")...)
		u, n := Uvarint(b)
		wu, wn := binary.Uvarint(b)
		require.Equal(t, wn, n)
		require.Equal(t, wu, u)
		s, n := Varint(b)
		ws, wn := binary.Varint(b)
		require.Equal(t, wn, n)
		require.Equal(t, ws, s)
	})
}

// TestEveryLength: the largest and smallest value of each length, with
// and without bytes after it.
func TestEveryLength(t *testing.T) {
	for k := 0; k <= 64; k++ {
		for _, v := range []uint64{1<<k - 1, 1 << k, math.MaxUint64 >> (64 - max(k, 1))} {
			for _, pad := range [][]byte{nil, {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80}} {
				b := append(binary.AppendUvarint(nil, v), pad...)
				u, n := Uvarint(b)
				require.Equal(t, v, u, "v %#x pad %d", v, len(pad))
				require.Equal(t, len(binary.AppendUvarint(nil, v)), n)
			}
		}
	}
}

// BenchmarkVarint: a 6-byte value (a duration of seconds, in ns) with
// bytes after it, as the value streams hold them.
func BenchmarkVarint(b *testing.B) {
	buf := append(binary.AppendVarint(nil, int64(3_500_000_000)), make([]byte, 16)...)
	b.Run("binary", func(b *testing.B) {
		b.ReportAllocs()
		var s int64
		for b.Loop() {
			v, _ := binary.Varint(buf)
			s += v
		}
		_ = s
	})
	b.Run("varint", func(b *testing.B) {
		b.ReportAllocs()
		var s int64
		for b.Loop() {
			v, _ := Varint(buf)
			s += v
		}
		_ = s
	})
}

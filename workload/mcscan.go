package workload

import (
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// mcFields is one Mooncake JSONL record as decoded, before validation:
// what mcJSON holds, without pointers (has says which fields were present).
type mcFields struct {
	has         uint16
	nums        [len(mcKeys)]float64 // the numeric fields, by has-bit index: see num
	hashIDs     []uint64
	newHashIDs  []uint64
	sessionID   []byte // raw JSON, as json.RawMessage
	sessionName string
	last        bool
}

// num is the numeric field whose has bit is bit (hasTimestamp,
// hasInputLength, ...): one table for both decoders and the validator.
func (f *mcFields) num(bit uint16) *float64 {
	return &f.nums[bits.TrailingZeros16(bit)]
}

// Bits of mcFields.has.
const (
	hasTimestamp uint16 = 1 << iota
	hasInputLength
	hasOutputLength
	hasHashIDs
	hasSessionID
	hasSessionName
	hasTurn
	hasThinkMS
	hasAppendLength
	hasBlockTokens
	hasLast
	hasPrefixBlocks
	hasNewHashIDs
)

// mcKeys are the keys of mcJSON, in the order of the has bits.
var mcKeys = [...]string{"timestamp", "input_length", "output_length", "hash_ids", "session_id",
	"session_name", "turn", "think_ms", "append_length", "block_tokens", "last", "prefix_blocks", "new_hash_ids"}

// scan is the fast path: a single pass over line for the plain shape of a
// record — an object whose keys are ASCII without escapes, each at most
// once, numbers for numeric fields, arrays of plain unsigned integers for
// hash_ids/new_hash_ids, a string or number for session_id, a string for
// session_name, true/false for last, and unknown keys with simple values.
// It returns false for anything else (malformed JSON, null, escapes,
// non-ASCII keys, a key that only case-folds to a known one, out-of-range
// numbers, ...): the caller then uses decodeSlow, whose result — value or
// error — is the reference. When scan returns true, f holds exactly what
// decodeSlow would. ids and newIDs are reused as the arrays' storage.
func (f *mcFields) scan(line []byte, ids, newIDs []uint64) bool {
	*f = mcFields{}
	b := line
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		k, j := scanKey(b, i, mcKeys[:])
		if j < 0 {
			return false
		}
		i = j
		if k < 0 {
			if i = skipValue(b, i, 0); i < 0 {
				return false
			}
		} else {
			bit := uint16(1) << k
			if f.has&bit != 0 {
				return false // duplicate key: leave the merge rules to encoding/json
			}
			f.has |= bit
			var ok bool
			switch bit {
			case hasHashIDs:
				f.hashIDs, i, ok = scanIDs(b, i, ids)
			case hasNewHashIDs:
				f.newHashIDs, i, ok = scanIDs(b, i, newIDs)
			case hasSessionID:
				start := i
				if i < len(b) && b[i] == '"' {
					i, ok = scanString(b, i)
				} else {
					var v float64
					v, i, ok = scanNumber(b, i)
					_ = v
				}
				if ok {
					f.sessionID = b[start:i]
				}
			case hasSessionName:
				start := i
				if i, ok = scanString(b, i); ok {
					f.sessionName = string(b[start+1 : i-1])
				}
			case hasLast:
				switch {
				case hasLit(b, i, "true"):
					f.last, i, ok = true, i+4, true
				case hasLit(b, i, "false"):
					f.last, i, ok = false, i+5, true
				}
			default:
				var v float64
				v, i, ok = scanNumber(b, i)
				*f.num(bit) = v
			}
			if !ok {
				return false
			}
		}
		// nextElem, by hand: this is the loader's hottest loop (nextElem
		// does not inline).
		i = skipSpace(b, i)
		if i >= len(b) {
			return false
		}
		if b[i] == '}' {
			return skipSpace(b, i+1) == len(b)
		}
		if b[i] != ',' {
			return false
		}
		i = skipSpace(b, i+1)
	}
}

func hasLit(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// scanKey reads the object key at b[i] and its colon for the fast
// scanners (mcFields.scan, scanObject): it returns the key's index in
// known (-1: not a known key) and the index of its value. It declines
// (j < 0) on an escaped or non-ASCII key, a key that only case-folds to a
// known one (encoding/json would match it case-insensitively) and
// malformed JSON.
func scanKey(b []byte, i int, known []string) (k, j int) {
	if i >= len(b) || b[i] != '"' {
		return -1, -1
	}
	ks := i + 1
	i = ks
	for i < len(b) && b[i] != '"' {
		if c := b[i]; c < 0x20 || c >= 0x80 || c == '\\' {
			return -1, -1
		}
		i++
	}
	if i >= len(b) {
		return -1, -1
	}
	key := b[ks:i]
	i = skipSpace(b, i+1)
	if i >= len(b) || b[i] != ':' {
		return -1, -1
	}
	i = skipSpace(b, i+1)
	for n, name := range known {
		if string(key) == name {
			return n, i
		}
	}
	for _, name := range known {
		if asciiEqualFold(key, name) {
			return -1, -1
		}
	}
	return -1, i
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// scanString accepts a JSON string at b[i] without escapes or control
// characters whose bytes are valid UTF-8 (so that decoding it is the
// identity); it returns the index after the closing quote.
func scanString(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	i++
	start := i
	ascii := true
	for i < len(b) && b[i] != '"' {
		c := b[i]
		if c < 0x20 || c == '\\' {
			return i, false
		}
		if c >= 0x80 {
			ascii = false
		}
		i++
	}
	if i >= len(b) || (!ascii && !utf8.Valid(b[start:i])) {
		return i, false
	}
	return i + 1, true
}

// moreDigits returns the index after the ASCII digits at b[i:] and
// whether there was at least one.
func moreDigits(b []byte, i int) (int, bool) {
	d := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i, i > d
}

// scanNumber accepts a JSON number at b[i] that parses as a finite
// float64, and returns its value as strconv.ParseFloat (encoding/json's
// conversion) gives it.
func scanNumber(b []byte, i int) (float64, int, bool) {
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i, _ = moreDigits(b, i)
	default:
		return 0, i, false
	}
	intEnd := i
	var ok bool
	if i < len(b) && b[i] == '.' {
		if i, ok = moreDigits(b, i+1); !ok {
			return 0, i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i, ok = moreDigits(b, i); !ok {
			return 0, i, false
		}
	}
	// A non-negative integer of at most 15 digits is exact in a float64.
	if intEnd == i && b[start] != '-' && i-start <= 15 {
		var v uint64
		for _, c := range b[start:i] {
			v = v*10 + uint64(c-'0')
		}
		return float64(v), i, true
	}
	v, err := strconv.ParseFloat(string(b[start:i]), 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, i, false
	}
	return v, i, true
}

// scanIDs accepts a JSON array of plain unsigned 64-bit integers at b[i]
// (what parseIDs accepts without error), appending to out[:0].
func scanIDs(b []byte, i int, out []uint64) ([]uint64, int, bool) {
	out, i, ok := appendIDs(b, i, out[:0])
	if ok && out == nil {
		out = []uint64{}
	}
	return out, i, ok
}

// appendIDs is scanIDs appending to out. Up to 19 digits cannot overflow
// a uint64, so only longer numbers are checked (digit by digit, as the
// decoding would); ", " between the elements is taken without skipSpace.
// A number's digits are read 8 bytes at a time where the line has 8 bytes
// left (digits8): the per-byte loop was the loader's hottest on compact
// traces (14-digit ids); appendIDsBytewise in mcscan_ref_test.go is the
// byte-at-a-time reference it is tested against.
func appendIDs(b []byte, i int, out []uint64) ([]uint64, int, bool) {
	if i >= len(b) || b[i] != '[' {
		return nil, i, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return out, i + 1, true
	}
	for {
		start := i
		var v uint64
		for i+8 <= len(b) {
			w := binary.LittleEndian.Uint64(b[i:])
			k := digits8(w)
			if k == 8 {
				v = v*1e8 + swar8(w-ascii0s)
				i += 8
				continue
			}
			if k > 0 {
				// the k digits at the low bytes, moved to the top: the
				// bytes below are leading zeros
				v = v*pow10[k] + swar8((w-ascii0s)<<(64-8*k))
				i += k
			}
			goto end
		}
		for i < len(b) {
			d := b[i] - '0'
			if d > 9 {
				break
			}
			v = v*10 + uint64(d)
			i++
		}
	end:
		if n := i - start; n == 0 || (b[start] == '0' && n > 1) {
			return nil, i, false
		} else if n > 19 {
			var ok bool
			if v, ok = checkedUint(b[start:i]); !ok {
				return nil, i, false
			}
		}
		out = append(out, v)
		if i+2 < len(b) && b[i] == ',' && b[i+1] == ' ' && b[i+2]-'0' <= 9 {
			i += 2 // the next element's first digit
			continue
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return nil, i, false
		}
		switch b[i] {
		case ']':
			return out, i + 1, true
		case ',':
			i = skipSpace(b, i+1)
		default:
			return nil, i, false // includes '.', 'e': not an integer
		}
	}
}

const (
	ascii0s  = 0x3030303030303030 // '0' in every byte
	highNibs = 0xF0F0F0F0F0F0F0F0
)

// pow10[k] is 10^k.
var pow10 = [...]uint64{1, 10, 100, 1000, 10000, 100000, 1000000, 10000000}

// digits8 is how many of the 8 bytes of w (little-endian: the first byte
// lowest) are ASCII digits before the first one that is not. A byte c is
// a digit iff its high nibble is 3 and that of c+6 too; a carry out of a
// byte (c >= 0xFA, not a digit) only disturbs the bytes above the first
// non-digit, which are not counted.
func digits8(w uint64) int {
	nd := (w&highNibs ^ ascii0s) | ((w+0x0606060606060606)&highNibs ^ ascii0s)
	return bits.TrailingZeros64(nd) >> 3
}

// swar8 is the value of the 8 decimal digits in the bytes of x (each 0-9,
// the most significant in the lowest byte), combining pairs, then
// quadruples, then the two halves.
func swar8(x uint64) uint64 {
	x = (x*10 + x>>8) & 0x00FF00FF00FF00FF
	x = (x*100 + x>>16) & 0x0000FFFF0000FFFF
	return (x*10000 + x>>32) & 0xFFFFFFFF
}

// checkedUint is the uint64 of the decimal digits ds; false when it
// overflows.
// 19 digits cannot overflow (< 10^19 <= MaxUint64): only those after them
// are checked.
func checkedUint(ds []byte) (uint64, bool) {
	var v uint64
	k := min(len(ds), 19)
	for _, c := range ds[:k] {
		v = v*10 + uint64(c-'0')
	}
	for _, c := range ds[k:] {
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// skipValue skips a simple JSON value at b[i] (strings as scanString
// accepts, numbers, literals, arrays and objects of those nested at most
// 32 deep); -1 declines.
func skipValue(b []byte, i, depth int) int {
	if i >= len(b) || depth > 32 {
		return -1
	}
	switch c := b[i]; {
	case c == '"':
		j, ok := scanString(b, i)
		if !ok {
			return -1
		}
		return j
	case c == '-' || (c >= '0' && c <= '9'):
		_, j, ok := scanNumber(b, i)
		if !ok {
			return -1
		}
		return j
	case hasLit(b, i, "true"):
		return i + 4
	case hasLit(b, i, "false"):
		return i + 5
	case hasLit(b, i, "null"):
		return i + 4
	case c == '[' || c == '{':
		end := byte(']')
		if c == '{' {
			end = '}'
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == end {
			return i + 1
		}
		for {
			if c == '{' {
				j, ok := scanString(b, i)
				if !ok {
					return -1
				}
				i = skipSpace(b, j)
				if i >= len(b) || b[i] != ':' {
					return -1
				}
				i = skipSpace(b, i+1)
			}
			if i = skipValue(b, i, depth+1); i < 0 {
				return -1
			}
			var done bool
			if i, done = nextElem(b, i, end); i < 0 || done {
				return i
			}
		}
	}
	return -1
}

package workload

// The fast path of the Bailian loader: a plain line (see scanObject) is
// decoded in one pass, anything else by encoding/json, so that the result
// and the errors are encoding/json's (FuzzBailianDecoders compares them).

var blKeys = []string{"chat_id", "parent_chat_id", "timestamp", "input_length", "output_length", "type", "turn", "hash_ids"}

// blScratch is the reusable storage of the fast path.
type blScratch struct {
	vals     [4]float64
	typ      string
	ids      []uint64
	lastType string
}

// scan fills j from a plain line; false: decode it with encoding/json.
// j's pointers and hash ids point into s until the next call.
func (s *blScratch) scan(line []byte, j *blJSON) bool {
	i := scanObject(line, skipSpace(line, 0), blKeys, func(k, i int) int {
		switch blKeys[k] {
		case "chat_id", "parent_chat_id":
			var e int
			if i < len(line) && line[i] == '"' {
				var ok bool
				if e, ok = scanString(line, i); !ok {
					return -1
				}
			} else if _, e2, ok := scanNumber(line, i); ok {
				e = e2
			} else {
				return -1
			}
			if k == 0 {
				j.ChatID = line[i:e:e]
			} else {
				j.ParentChatID = line[i:e:e]
			}
			return e
		case "type":
			e, ok := scanString(line, i)
			if !ok {
				return -1
			}
			if v := line[i+1 : e-1]; string(v) != s.lastType {
				s.lastType = string(v)
			}
			s.typ = s.lastType
			j.Type = &s.typ
			return e
		case "hash_ids":
			ids, e, ok := scanIDs(line, i, s.ids)
			if !ok {
				return -1
			}
			s.ids = ids
			l := idList(ids)
			j.HashIDs = &l
			return e
		}
		v, e, ok := scanNumber(line, i)
		if !ok {
			return -1
		}
		var p *float64
		switch blKeys[k] {
		case "timestamp":
			p = &s.vals[0]
		case "input_length":
			p = &s.vals[1]
		case "output_length":
			p = &s.vals[2]
		default: // turn
			p = &s.vals[3]
		}
		*p = v
		switch blKeys[k] {
		case "timestamp":
			j.Timestamp = p
		case "input_length":
			j.InputLength = p
		case "output_length":
			j.OutputLength = p
		default:
			j.Turn = p
		}
		return e
	})
	return i >= 0 && skipSpace(line, i) == len(line)
}

package workload

import (
	"bytes"
	"encoding/json"
)

// The Claude Code session documents are decoded like Mooncake lines: a
// one-pass scanner for the plain shape, encoding/json for everything else
// (see mcFields.scan for what "plain" means and why the result is
// encoding/json's either way; FuzzClaudeCodeDecoders compares the two).

var ccDocKeys = []string{"id", "block_size", "tool_tokens", "system_tokens", "requests"}

// ccReqField is a key of a request object and the decoder of its value
// into r; dec returns the index after the value or -1 to decline.
type ccReqField struct {
	key string
	dec func(s *ccScanner, i int, r *ccReqJSON) int
}

// ccReqFields are the keys of ccReqJSON, one row each; ccReqKeys are
// their names, in the same order (scanObject's key indexes).
var (
	ccReqFields = []ccReqField{
		{"t", func(s *ccScanner, i int, r *ccReqJSON) int { return s.num(i, &r.T) }},
		{"type", func(s *ccScanner, i int, r *ccReqJSON) int { return s.strPtr(i, &r.Type) }},
		{"in", func(s *ccScanner, i int, r *ccReqJSON) int { return s.num(i, &r.In) }},
		{"out", func(s *ccScanner, i int, r *ccReqJSON) int { return s.num(i, &r.Out) }},
		{"hash_ids", (*ccScanner).hashIDs},
		{"think_time", func(s *ccScanner, i int, r *ccReqJSON) int { return s.num(i, &r.Think) }},
		{"api_time", func(s *ccScanner, i int, r *ccReqJSON) int { return s.num(i, &r.API) }},
		{"agent_id", func(s *ccScanner, i int, r *ccReqJSON) int { return s.strPtr(i, &r.AgentID) }},
		{"tool_tokens", func(s *ccScanner, i int, r *ccReqJSON) int { return s.num(i, &r.ToolTokens) }},
		{"system_tokens", func(s *ccScanner, i int, r *ccReqJSON) int { return s.num(i, &r.SystemTokens) }},
		{"requests", (*ccScanner).rawRequests},
	}
	ccReqKeys = func() []string {
		keys := make([]string, len(ccReqFields))
		for k, f := range ccReqFields {
			keys[k] = f.key
		}
		return keys
	}()
)

// scanObject walks the JSON object at b[i]. For a key equal to known[k] it
// calls value(k, i), which returns the index after the value or -1 to
// decline; other keys' values are skipped. It declines (-1) on escaped or
// non-ASCII keys, keys that only case-fold to a known one, duplicate known
// keys and malformed JSON; otherwise it returns the index after the '}'.
func scanObject(b []byte, i int, known []string, value func(k, i int) int) int {
	if i >= len(b) || b[i] != '{' {
		return -1
	}
	var seen uint64
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for {
		k, j := scanKey(b, i, known)
		if j < 0 {
			return -1
		}
		i = j
		if k < 0 {
			i = skipValue(b, i, 0)
		} else {
			if seen&(1<<k) != 0 {
				return -1
			}
			seen |= 1 << k
			i = value(k, i)
		}
		if i < 0 {
			return -1
		}
		var done bool
		if i, done = nextElem(b, i, '}'); i < 0 || done {
			return i
		}
	}
}

// scanArray walks the JSON array at b[i], calling elem at the start of
// each element; elem returns the index after the element or -1 to decline.
// scanArray returns the index after the ']', or -1.
func scanArray(b []byte, i int, elem func(i int) int) int {
	if i >= len(b) || b[i] != '[' {
		return -1
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1
	}
	for {
		if i = elem(i); i < 0 {
			return -1
		}
		var done bool
		if i, done = nextElem(b, i, ']'); i < 0 || done {
			return i
		}
	}
}

// ccScanner decodes Claude Code documents; ids is the arena the requests'
// hash_ids are cut from (the parser copies what it keeps).
type ccScanner struct {
	b   []byte
	ids []uint64
}

func (s *ccScanner) num(i int, dst **float64) int {
	v, j, ok := scanNumber(s.b, i)
	if !ok {
		return -1
	}
	*dst = &v
	return j
}

func (s *ccScanner) str(i int, dst *string) int {
	j, ok := scanString(s.b, i)
	if !ok {
		return -1
	}
	*dst = string(s.b[i+1 : j-1])
	return j
}

func (s *ccScanner) strPtr(i int, dst **string) int {
	var v string
	j := s.str(i, &v)
	if j >= 0 {
		*dst = &v
	}
	return j
}

// doc decodes a whole session document (nothing but spaces after it).
func (s *ccScanner) doc(d *ccFileJSON[ccReqJSON]) bool {
	b := s.b
	if s.ids == nil {
		// Every id but an array's last is followed by a comma: one
		// allocation holds them all.
		s.ids = make([]uint64, 0, bytes.Count(b, []byte{','})+bytes.Count(b, []byte{'['}))
	}
	i := scanObject(b, skipSpace(b, 0), ccDocKeys, func(k, i int) int {
		switch ccDocKeys[k] {
		case "id":
			return s.str(i, &d.ID)
		case "block_size":
			return s.num(i, &d.BlockSize)
		case "tool_tokens":
			return s.num(i, &d.ToolTokens)
		case "system_tokens":
			return s.num(i, &d.SystemTokens)
		}
		// requests: an array of request objects
		d.Requests = []ccReqJSON{}
		return scanArray(b, i, func(i int) int {
			d.Requests = append(d.Requests, ccReqJSON{})
			return s.req(i, &d.Requests[len(d.Requests)-1])
		})
	})
	return i >= 0 && skipSpace(b, i) == len(b)
}

// req decodes the request object at b[i].
func (s *ccScanner) req(i int, r *ccReqJSON) int {
	return scanObject(s.b, i, ccReqKeys, func(k, i int) int { return ccReqFields[k].dec(s, i, r) })
}

// hashIDs decodes a request's hash_ids, cut from the ids arena.
func (s *ccScanner) hashIDs(i int, r *ccReqJSON) int {
	start := len(s.ids)
	ids, j, ok := appendIDs(s.b, i, s.ids)
	if !ok {
		return -1
	}
	s.ids = ids
	l := idList(ids[start:len(ids):len(ids)])
	r.HashIDs = &l
	return j
}

// rawRequests keeps a subagent's requests raw, decoded later.
func (s *ccScanner) rawRequests(i int, r *ccReqJSON) int {
	b := s.b
	r.Requests = []json.RawMessage{}
	return scanArray(b, i, func(i int) int {
		j := skipValue(b, i, 0)
		if j >= 0 {
			r.Requests = append(r.Requests, json.RawMessage(b[i:j:j]))
		}
		return j
	})
}

// decodeReq decodes one raw request (a subagent's): with sc (the fast
// path) when it is plain, with encoding/json otherwise or when sc is nil.
func decodeReq(sc *ccScanner, raw []byte, r *ccReqJSON) error {
	if sc != nil {
		sc.b = raw
		if sc.ids == nil {
			sc.ids = make([]uint64, 0, len(raw)/6+1)
		}
		if j := sc.req(skipSpace(raw, 0), r); j >= 0 && skipSpace(raw, j) == len(raw) {
			return nil
		}
		*r = ccReqJSON{}
	}
	return json.Unmarshal(raw, r)
}

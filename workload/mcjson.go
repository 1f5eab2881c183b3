package workload

import "encoding/json"

// mcJSON is the reference decoding of a record (encoding/json), used for
// every line the fast scanner declines.
type mcJSON struct {
	Timestamp    *float64        `json:"timestamp"`
	InputLength  *float64        `json:"input_length"`
	OutputLength *float64        `json:"output_length"`
	HashIDs      *idList         `json:"hash_ids"`
	SessionID    json.RawMessage `json:"session_id"`
	SessionName  *string         `json:"session_name"`
	Turn         *float64        `json:"turn"`
	ThinkMS      *float64        `json:"think_ms"`
	AppendLength *float64        `json:"append_length"`
	BlockTokens  *float64        `json:"block_tokens"`
	Last         *bool           `json:"last"`
	PrefixBlocks *float64        `json:"prefix_blocks"`
	NewHashIDs   *newIDList      `json:"new_hash_ids"`
}

// decodeSlow decodes line with encoding/json into f.
func (f *mcFields) decodeSlow(line []byte) error {
	var j mcJSON
	if err := json.Unmarshal(line, &j); err != nil {
		return err
	}
	*f = mcFields{sessionID: j.SessionID}
	if len(j.SessionID) > 0 {
		f.has |= hasSessionID
	}
	for _, n := range [...]struct {
		bit uint16
		p   *float64
	}{{hasTimestamp, j.Timestamp}, {hasInputLength, j.InputLength}, {hasOutputLength, j.OutputLength},
		{hasTurn, j.Turn}, {hasThinkMS, j.ThinkMS}, {hasAppendLength, j.AppendLength},
		{hasBlockTokens, j.BlockTokens}, {hasPrefixBlocks, j.PrefixBlocks}} {
		if n.p != nil {
			f.has |= n.bit
			*f.num(n.bit) = *n.p
		}
	}
	if j.HashIDs != nil {
		f.has |= hasHashIDs
		f.hashIDs = []uint64(*j.HashIDs)
	}
	if j.NewHashIDs != nil {
		f.has |= hasNewHashIDs
		f.newHashIDs = []uint64(*j.NewHashIDs)
	}
	if j.SessionName != nil {
		f.has |= hasSessionName
		f.sessionName = *j.SessionName
	}
	if j.Last != nil {
		f.has |= hasLast
		f.last = *j.Last
	}
	return nil
}

package serve

import (
	"encoding/json"
	"net/http"
	"strings"
)

// /tokenize and /detokenize, vLLM's shapes, over pdemu's tokenizer
// (tokens.go): ⌊bytes/4⌋ tokens, token i the bytes [4i, 4i+4) and the last
// one the rest (4 to 7 bytes). A token id is its bytes, so ids round-trip
// exactly through /detokenize: id = len<<56 | the bytes little-endian
// (below 2^59; JSON clients that parse numbers as doubles lose the low
// bits above 2^53).

type tokenizeRequest struct {
	Model               string            `json:"model"`
	Prompt              *string           `json:"prompt"`
	Messages            []json.RawMessage `json:"messages"`
	AddGenerationPrompt *bool             `json:"add_generation_prompt"`
	AddSpecialTokens    *bool             `json:"add_special_tokens"`
	ReturnTokenStrs     *bool             `json:"return_token_strs"`
}

type tokenizeResponse struct {
	Count       int      `json:"count"`
	MaxModelLen int      `json:"max_model_len"`
	Tokens      []int64  `json:"tokens"`
	TokenStrs   []string `json:"token_strs"`
}

// tokenPieces cuts text into its tokens' bytes.
func tokenPieces(text string) []string {
	n := TokenCount(len(text))
	out := make([]string, n)
	for i := range n {
		lo, hi := i*BytesPerToken, (i+1)*BytesPerToken
		if i == n-1 {
			hi = len(text)
		}
		out[i] = text[lo:hi]
	}
	return out
}

func tokenID(piece string) int64 {
	id := int64(len(piece)) << 56
	for i := range len(piece) {
		id |= int64(piece[i]) << (8 * i)
	}
	return id
}

// tokenText inverts tokenID; ok is false for an id no text maps to.
func tokenText(id int64) (string, bool) {
	n := int(id >> 56)
	if n < 1 || n > 2*BytesPerToken-1 || id&^(int64(1)<<(8*n)-1|int64(n)<<56) != 0 {
		return "", false
	}
	b := make([]byte, n)
	for i := range n {
		b[i] = byte(id >> (8 * i))
	}
	return string(b), true
}

func (s *Server) tokenize(w http.ResponseWriter, r *http.Request, body []byte) {
	var req tokenizeRequest
	if !s.decodeChecked(w, body, &req, &req.Model) {
		return
	}
	var text string
	switch {
	case req.Prompt != nil && req.Messages == nil:
		text = *req.Prompt
	case req.Messages != nil && req.Prompt == nil:
		msgs, e := (&chatRequest{Messages: req.Messages}).messages()
		if e != nil {
			s.fail(w, e)
			return
		}
		text = chatTemplate(msgs)
		if req.AddGenerationPrompt != nil && !*req.AddGenerationPrompt {
			text = strings.TrimSuffix(text, "<|im_start|>assistant\n")
		}
	default:
		s.fail(w, badRequest("prompt", "", "give exactly one of prompt and messages"))
		return
	}
	pieces := tokenPieces(text)
	out := tokenizeResponse{Count: len(pieces), MaxModelLen: s.opts.MaxModelLen, Tokens: make([]int64, len(pieces))}
	for i, p := range pieces {
		out.Tokens[i] = tokenID(p)
	}
	if req.ReturnTokenStrs != nil && *req.ReturnTokenStrs {
		out.TokenStrs = pieces
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func (s *Server) detokenize(w http.ResponseWriter, r *http.Request, body []byte) {
	var req struct {
		Model  string  `json:"model"`
		Tokens []int64 `json:"tokens"`
	}
	if !s.decodeChecked(w, body, &req, &req.Model) {
		return
	}
	var b strings.Builder
	for i, id := range req.Tokens {
		t, ok := tokenText(id)
		if !ok {
			s.fail(w, badRequest("tokens", "invalid_value", "tokens[%d] = %d is not a pdemu token id (see /tokenize)", i, id))
			return
		}
		b.WriteString(t)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"prompt": b.String()})
}

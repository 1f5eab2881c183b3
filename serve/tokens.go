package serve

import (
	"hash/fnv"
	"math"
	"strings"

	"github.com/pdemu/pdemu/internal/splitmix"
)

// Text to tokens and blocks.
//
// Token count: ⌊UTF-8 bytes / 4⌋, at least 1 for a non-empty text. This is
// OpenAI's rule of thumb ("one token generally corresponds to ~4 characters
// of text for common English text", help.openai.com, "What are tokens and
// how to count them?"); it is documented in docs/MODEL.md §8 and
// docs/SERVE.md. It needs no vocabulary, so the binary stays small and the
// count is stable across versions.
//
// Blocks: the prompt is cut into blocks of BlockTokens tokens, i.e.
// 4·BlockTokens bytes, and only full blocks are hashed, as a chain: block i's
// hash mixes block i−1's hash with the bytes of block i, so Blocks[i]
// identifies bytes [0, 4·BlockTokens·(i+1)) and two prompts share Blocks[i]
// only if they share that whole prefix, exactly as workload.Request
// requires. A conversation re-sent with its history (previous prompt +
// the assistant's answer + new messages) therefore shares every full block
// of the previous prompt.

// BytesPerToken is the approximation's ratio.
const BytesPerToken = 4

// TokenCount is the approximate number of tokens of n bytes of text.
func TokenCount(n int) int {
	if n <= 0 {
		return 0
	}
	return max(1, n/BytesPerToken)
}

// blockHashes returns the chained hashes of the full blocks of text.
// It is seeded by salt (the model name) so two models never share blocks.
func blockHashes(text string, blockTokens int, salt uint64) []uint64 {
	bb := blockTokens * BytesPerToken
	n := len(text) / bb
	if n == 0 {
		return nil
	}
	out := make([]uint64, n)
	prev := salt
	for i := range n {
		h := fnv.New64a()
		var p [8]byte
		for k := range 8 {
			p[k] = byte(prev >> (8 * k))
		}
		h.Write(p[:])
		h.Write([]byte(text[i*bb : (i+1)*bb]))
		prev = splitmix.Mix64(h.Sum64())
		out[i] = prev
	}
	return out
}

func hashString(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return splitmix.Mix64(h.Sum64())
}

// chatTemplate serialises a conversation ChatML-style; the template's own
// bytes count as prompt tokens, as a real chat template's do.
func chatTemplate(msgs []chatMessage) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString("<|im_start|>")
		b.WriteString(m.Role)
		b.WriteByte('\n')
		b.WriteString(m.Content)
		b.WriteString("<|im_end|>\n")
	}
	// The generation prompt: the answer starts after it, so the next turn,
	// which re-sends this answer as an assistant message, extends this
	// prompt byte for byte.
	b.WriteString("<|im_start|>assistant\n")
	return b.String()
}

// fillerWords are the output vocabulary: each is exactly BytesPerToken
// bytes, so an answer of n tokens is 4n bytes and counts as n tokens when a
// client re-sends it.
var fillerWords = [...]string{
	" the", " and", " for", " you", " are", " not", " all", " can",
	" was", " one", " our", " out", " day", " get", " has", " how",
	" new", " now", " old", " see", " two", " way", " who", " did",
	" its", " let", " put", " say", " too", " use", " key", " map",
}

// fillerToken is the text of output token i of a request with seed s:
// deterministic, plain ASCII words.
func fillerToken(seed uint64, i int) string {
	return fillerWords[splitmix.Mix64(seed+uint64(i)*0x9e3779b97f4a7c15)%uint64(len(fillerWords))]
}

// fillerText is output tokens [0, n) concatenated.
func fillerText(seed uint64, n int) string {
	var b strings.Builder
	b.Grow(n * BytesPerToken)
	for i := range n {
		b.WriteString(fillerToken(seed, i))
	}
	return b.String()
}

// defaultOutputLen draws the output length of a request without max_tokens
// from a log-normal distribution with the given mean and σ=0.8 (the
// agentic generator's output distribution, workload/agentic.go), using the
// request's own hash as the random source: deterministic per prompt.
func defaultOutputLen(mean int, h uint64) int {
	const sigma = 0.8
	// Two uniforms from the hash → one standard normal (Box–Muller).
	u1 := (float64(splitmix.Mix64(h)>>11) + 0.5) / (1 << 53)
	u2 := (float64(splitmix.Mix64(h^0x5bd1e995)>>11) + 0.5) / (1 << 53)
	z := math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
	mu := math.Log(float64(mean)) - sigma*sigma/2
	return max(1, int(math.Round(math.Exp(mu+sigma*z))))
}

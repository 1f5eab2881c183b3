package serve

import (
	"math"

	"github.com/pdemu/pdemu/internal/splitmix"
)

// tokenLogprob is one output token's synthetic log-probability and its
// alternatives: well-formed (the chosen token first, log-probabilities
// ≤ 0 and decreasing) but not a model's.
type tokenLogprob struct {
	Token       string       `json:"token"`
	Logprob     float64      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []topLogprob `json:"top_logprobs"`
}

type topLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

func tokenBytes(t string) []int {
	b := make([]int, len(t))
	for i := range len(t) {
		b[i] = int(t[i])
	}
	return b
}

func (rl *relay) logprob(ch *choice, i int) tokenLogprob {
	tok := ch.visible(i)
	h := splitmix.Mix64(ch.seed ^ uint64(i+1)*0x9e3779b97f4a7c15)
	lp := -float64(h%2000) / 1000 // in (-2, 0]
	out := tokenLogprob{Token: tok, Logprob: lp, Bytes: tokenBytes(tok), TopLogprobs: []topLogprob{}}
	if rl.c.topLogprobs > 0 {
		out.TopLogprobs = append(out.TopLogprobs, topLogprob{tok, lp, tokenBytes(tok)})
		for k := 1; len(out.TopLogprobs) < rl.c.topLogprobs; k++ {
			alt := fillerWords[(h+uint64(k))%uint64(len(fillerWords))]
			if alt == tok {
				continue
			}
			l := lp - float64(k)*0.5
			out.TopLogprobs = append(out.TopLogprobs, topLogprob{alt, math.Round(l*1000) / 1000, tokenBytes(alt)})
		}
	}
	return out
}

// logprobsOf is a choice's logprobs object: chat's {"content": [...]} or
// the completions API's parallel lists, from text offset off.
func (rl *relay) logprobsOf(lps []tokenLogprob, off int) any {
	if rl.c.chat {
		return map[string]any{"content": lps}
	}
	type completionLogprobs struct {
		Tokens        []string             `json:"tokens"`
		TokenLogprobs []float64            `json:"token_logprobs"`
		TopLogprobs   []map[string]float64 `json:"top_logprobs"`
		TextOffset    []int                `json:"text_offset"`
	}
	c := completionLogprobs{Tokens: []string{}, TokenLogprobs: []float64{}, TopLogprobs: []map[string]float64{}, TextOffset: []int{}}
	for _, t := range lps {
		c.Tokens = append(c.Tokens, t.Token)
		c.TokenLogprobs = append(c.TokenLogprobs, t.Logprob)
		top := map[string]float64{}
		for _, a := range t.TopLogprobs {
			top[a.Token] = a.Logprob
		}
		c.TopLogprobs = append(c.TopLogprobs, top)
		c.TextOffset = append(c.TextOffset, off)
		off += len(t.Token)
	}
	return c
}

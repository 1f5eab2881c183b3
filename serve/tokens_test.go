package serve

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestTokenCount(t *testing.T) {
	for _, tc := range []struct{ bytes, tokens int }{{0, 0}, {1, 1}, {3, 1}, {4, 1}, {7, 1}, {8, 2}, {96, 24}, {1000, 250}} {
		assert.Equal(t, tc.tokens, TokenCount(tc.bytes), tc.bytes)
	}
}

// Blocks are a prefix chain: extending a text keeps every full block of it,
// and changing one byte changes exactly the blocks from the one holding it.
func TestBlockHashesArePrefixChained(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := rapid.StringN(0, 300, -1).Draw(t, "a")
		b := rapid.StringN(0, 300, -1).Draw(t, "b")
		ha := blockHashes(a, 24, 7)
		hab := blockHashes(a+b, 24, 7)
		require.Len(t, ha, len(a)/96)
		require.Len(t, hab, len(a+b)/96)
		for i := range ha {
			require.Equal(t, ha[i], hab[i])
		}
		ab := a + b
		if len(ab) == 0 {
			return
		}
		p := rapid.IntRange(0, len(ab)-1).Draw(t, "p")
		mod := []byte(ab)
		mod[p] ^= 0x20
		hm := blockHashes(string(mod), 24, 7)
		for i := range hab {
			if i < p/96 {
				require.Equal(t, hab[i], hm[i], "block %d before the change", i)
			} else {
				require.NotEqual(t, hab[i], hm[i], "block %d at or after the change", i)
			}
		}
		// Another salt (model) shares nothing.
		for i, h := range blockHashes(ab, 24, 8) {
			require.NotEqual(t, hab[i], h)
		}
	})
}

func TestFillerTokensAreFourBytes(t *testing.T) {
	for _, w := range fillerWords {
		assert.Len(t, w, BytesPerToken, w)
	}
	text := fillerText(42, 100)
	assert.Len(t, text, 400)
	assert.Equal(t, 100, TokenCount(len(text)))
	assert.Equal(t, text, fillerText(42, 100))
	assert.True(t, strings.HasPrefix(fillerText(42, 100), fillerText(42, 10)))
}

func TestDefaultOutputLen(t *testing.T) {
	total := 0
	const n = 20000
	for i := range n {
		v := defaultOutputLen(150, hashString(string(rune(i))+"x"))
		require.GreaterOrEqual(t, v, 1)
		total += v
	}
	// Log-normal with mean 150: the sample mean is within a few percent.
	assert.InDelta(t, 150, float64(total)/n, 10)
	assert.Equal(t, defaultOutputLen(150, 99), defaultOutputLen(150, 99))
}

func TestSessionsTurnsAndAppend(t *testing.T) {
	s := newSessions(2, 0)
	p0 := strings.Repeat("p", 400)
	r0 := s.build("a", p0, 100, 20, []uint64{1, 2, 3, 4}, 24)
	assert.Equal(t, 0, r0.Turn)
	assert.Equal(t, 100, r0.AppendLen)
	// The history re-sent (prompt + the 20-token answer) plus 30 new tokens.
	p1 := p0 + strings.Repeat("a", 80) + strings.Repeat("n", 120)
	r1 := s.build("a", p1, 150, 10, []uint64{1, 2, 3, 4, 5, 6}, 24)
	assert.Equal(t, r0.Session, r1.Session)
	assert.Equal(t, 1, r1.Turn)
	assert.Equal(t, 30, r1.AppendLen)
	// A diverged history is not a continuation: a new session, turn 0,
	// which the key names from now on.
	r2 := s.build("a", p0[:200]+strings.Repeat("d", 600), 200, 10, []uint64{1, 2, 9, 9, 9, 9, 9, 9}, 24)
	assert.NotEqual(t, r0.Session, r2.Session)
	assert.Equal(t, 0, r2.Turn)
	assert.Equal(t, 200, r2.AppendLen)
	b := s.build("b", "bb", 10, 1, nil, 24)
	assert.NotEqual(t, r0.Session, b.Session)
	assert.Equal(t, []int64{0, 1, 2, 3}, []int64{r0.ID, r1.ID, r2.ID, b.ID})
	// A third session evicts the oldest ("a"), which then starts afresh.
	s.build("c", "cc", 10, 1, nil, 24)
	assert.Equal(t, 2, s.count())
	a := s.build("a", "aa", 10, 1, nil, 24)
	assert.Equal(t, 0, a.Turn)
	assert.NotEqual(t, r2.Session, a.Session)
}

// Issue 21 row 4: continuation is decided on the prompt's content, not
// on a byte threshold. A session whose first prompt is shorter than a
// block ("hi") continues only into prompts that start with it; an
// unrelated prompt under the same session id is a new session, turn 0;
// the same prompt sent again (a fixed-body benchmark) is a new session
// each time, not the next turn of one.
func TestSessionsContinueOnContentOnly(t *testing.T) {
	for _, tc := range []struct {
		name        string
		first, next string
		continues   bool
	}{
		{"short opening, continued", "hi", "hi there, and more", true},
		{"short opening, unrelated prompt", "hi", strings.Repeat("an unrelated long prompt ", 300), false},
		{"long opening, continued", strings.Repeat("x", 1000), strings.Repeat("x", 1000) + "y", true},
		{"long opening, diverged in its last byte", strings.Repeat("x", 999) + "a", strings.Repeat("x", 999) + "b tail", false},
		{"the same prompt again", "the same benchmark prompt", "the same benchmark prompt", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSessions(16, 0)
			r0 := s.build("h:s1", tc.first, TokenCount(len(tc.first)), 8, blockHashes(tc.first, 24, 1), 24)
			r1 := s.build("h:s1", tc.next, TokenCount(len(tc.next)), 8, blockHashes(tc.next, 24, 1), 24)
			assert.Equal(t, tc.continues, r0.Session == r1.Session)
			if tc.continues {
				assert.Equal(t, 1, r1.Turn)
			} else {
				assert.Equal(t, 0, r1.Turn)
				assert.Equal(t, r1.InputLen, r1.AppendLen)
			}
		})
	}
}

func TestPromptBlocksMatchesTheServer(t *testing.T) {
	text := chatTemplate([]chatMessage{{Role: "user", Content: strings.Repeat("abcd", 100)}})
	assert.Equal(t, blockHashes(text, 24, hashString("model:m")), PromptBlocks(ChatPrompt([]Message{{"user", strings.Repeat("abcd", 100)}}), 24, "m"))
	assert.Len(t, PromptBlocks(text, 24, "m"), len(text)/96)
}

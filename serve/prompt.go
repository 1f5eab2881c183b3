package serve

// What a KV-aware router needs to recompute the server's block hashes
// from a request (docs/SERVE.md, "KV-cache events").

// Message is one chat message (role and text content).
type Message struct{ Role, Content string }

// ChatPrompt is the prompt text a chat request's messages become (the
// ChatML-style template of chatTemplate); its tokens and blocks are cut
// from it.
func ChatPrompt(msgs []Message) string {
	cm := make([]chatMessage, len(msgs))
	for i, m := range msgs {
		cm[i] = chatMessage(m)
	}
	return chatTemplate(cm)
}

// PromptBlocks is the chained block hashes the server computes for a
// prompt text served as model, with blockTokens tokens per block: block i
// is SplitMix64's finaliser of FNV-1a 64 over (the previous hash as 8
// little-endian bytes, then bytes [4·blockTokens·i, 4·blockTokens·(i+1))
// of the text); the hash before block 0 is the same function of the
// string "model:"+model with no previous hash. Only full blocks count.
func PromptBlocks(text string, blockTokens int, model string) []uint64 {
	return blockHashes(text, blockTokens, hashString("model:"+model))
}

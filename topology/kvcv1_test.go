package topology

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAllBlacklisted: all_blacklisted defaults to degenerate_fallback with
// v1 = true and least_rejected otherwise; an explicit value wins either
// way; a bad value is a diagnostic with the file position.
func TestAllBlacklisted(t *testing.T) {
	base := p0 + d0 + l00
	router := func(body string) string { return base + "\nrouter \"kvc\" {\n" + body + "\n}\n" }
	for body, want := range map[string]string{
		"":           AllBlacklistedLeastRejected,
		"v1 = true":  AllBlacklistedDegenerate,
		"v1 = false": AllBlacklistedLeastRejected,
		"v1 = true\nall_blacklisted = \"least_rejected\"":       AllBlacklistedLeastRejected,
		"v1 = false\nall_blacklisted = \"degenerate_fallback\"": AllBlacklistedDegenerate,
	} {
		assert.Equal(t, want, mustParse(t, router(body), testOpts).Router.AllBlacklisted, body)
	}
	msg := parseErr(t, router("all_blacklisted = \"least_rejectd\""), testOpts)
	assert.Contains(t, msg, "all_blacklisted")
	assert.Contains(t, msg, `"least_rejected"?`)
	assert.Contains(t, msg, "test.hcl:")
	assert.Empty(t, mustParse(t, base+"\nrouter \"vanilla\" {}\n", testOpts).Router.AllBlacklisted, "kvc only")
}

package metrics

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestJoinReasons(t *testing.T) {
	assert.Equal(t, "", JoinReasons(nil))
	assert.Equal(t, "a", JoinReasons([]string{"a"}))
	assert.Equal(t, "fault: d1 down;capacity(x3);tau_append", JoinReasons([]string{"fault: d1 down"}, []string{"capacity", "capacity", "tau_append", "capacity"}))
	many := make([]string, 192)
	for i := range many {
		many[i] = "session-not-resident-no-capacity"
	}
	assert.Equal(t, "session-not-resident-no-capacity(x192)", JoinReasons(many), "one entry, not 192")
}

package metrics

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pdemu/pdemu/policy"
)

// TestUnfinishedKeepsEveryJobField: a row of a partial run carries every
// field its job carries, as a completed row does (the two used to be
// separate mappings and the unfinished one dropped the bucket fields).
// Only the fields that depend on how the request ended may differ.
func TestUnfinishedKeepsEveryJobField(t *testing.T) {
	endDependent := map[string]bool{
		"TTFT": true, "E2E": true, "TPOT": true, "Reason": true, "Failed": true,
		"State": true, "Parts": true, "HasParts": true,
	}
	j := job(5, policy.ModeSeed, "")
	j.Req.Session = 3
	j.Bucket, j.BucketPolicy = "b1", "length_prefix"
	j.LengthBucketMatch, j.BucketPredictedPrefix = true, 7
	j.RouteLog = []byte(`{"id":5}`)
	j.KVCause = "first-turn"
	j.Tries, j.TransferBytes, j.CachedTokens, j.PrefillTokens = 2, 4096, 64, 32
	j.KVCause = "capacity@1.000s-for-r3"
	j.Done = j.FirstToken + time.Second

	done := NewCollector([]string{"p0"}, []string{"d0", "d1"})
	require.NoError(t, done.Add(j))
	want := done.Records()[0]
	got := NewCollector([]string{"p0"}, []string{"d0", "d1"}).Unfinished(j)

	wv, gv := reflect.ValueOf(want), reflect.ValueOf(got)
	for i := 0; i < wv.NumField(); i++ {
		f := wv.Type().Field(i).Name
		if endDependent[f] {
			continue
		}
		assert.Equal(t, wv.Field(i).Interface(), gv.Field(i).Interface(), "field %s", f)
		assert.False(t, wv.Field(i).IsZero(), "field %s: the test job leaves it zero, so it proves nothing", f)
	}
}

package testkit

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Do sends a request with a JSON body (Content-Type application/json) to
// url with http.DefaultClient; header is name, value pairs, and a pair
// with an empty value is not sent. The test fails on a request that does
// not go out; the caller closes the response's body.
func Do(t testing.TB, method, url, body string, header ...string) *http.Response {
	t.Helper()
	require.Zero(t, len(header)%2, "header is name, value pairs")
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i < len(header); i += 2 {
		if header[i+1] != "" {
			req.Header.Set(header[i], header[i+1])
		}
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return res
}

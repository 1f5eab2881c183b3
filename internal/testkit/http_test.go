package testkit

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Do sends the method, body, JSON content type and the non-empty headers.
func TestDoSendsJSONAndNonEmptyHeaders(t *testing.T) {
	var got *http.Request
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got, body = r, string(b)
		w.WriteHeader(http.StatusTeapot)
	}))
	defer srv.Close()
	res := Do(t, "PUT", srv.URL+"/x", `{"a":1}`, "X-Session-Id", "s1", "X-Request-Id", "")
	res.Body.Close()
	assert.Equal(t, http.StatusTeapot, res.StatusCode)
	require.NotNil(t, got)
	assert.Equal(t, "PUT", got.Method)
	assert.Equal(t, "/x", got.URL.Path)
	assert.Equal(t, `{"a":1}`, body)
	assert.Equal(t, "application/json", got.Header.Get("Content-Type"))
	assert.Equal(t, "s1", got.Header.Get("X-Session-Id"))
	_, sent := got.Header["X-Request-Id"]
	assert.False(t, sent, "an empty value is not sent")
}

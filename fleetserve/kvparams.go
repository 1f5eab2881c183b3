package fleetserve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/pdemu/pdemu/serve"
)

// kvParams is vLLM's kv_transfer_params object (NixlConnector): what a
// proxy sends to the prefill pod (do_remote_decode), what the prefill pod
// returns and the proxy forwards to the decode pod (do_remote_prefill,
// remote_*). Unknown fields are ignored, as vLLM ignores them.
type kvParams struct {
	DoRemoteDecode  bool    `json:"do_remote_decode"`
	DoRemotePrefill bool    `json:"do_remote_prefill"`
	RemoteEngineID  *string `json:"remote_engine_id"`
	RemoteBlockIDs  []int   `json:"remote_block_ids"`
	RemoteHost      *string `json:"remote_host"`
	RemotePort      *int    `json:"remote_port"`
	RemoteRequestID *string `json:"remote_request_id"`
	TPSize          *int    `json:"tp_size,omitempty"`
}

// probe is the part of a completion request the endpoint reads before
// package serve parses it all.
type probe struct {
	KV                  json.RawMessage `json:"kv_transfer_params"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stream              *bool           `json:"stream"`
}

// apiErr writes vLLM's error body (serve.ErrorBody), as pdemu serve does.
func apiErr(w http.ResponseWriter, status int, param, format string, a ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(serve.ErrorBody(status, param, fmt.Sprintf(format, a...)))
}

// parseKV reads kv_transfer_params (absent or null: nil).
func parseKV(raw json.RawMessage) (*kvParams, error) {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, nil
	}
	var p kvParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("kv_transfer_params: %v", jsonErr(err))
	}
	return &p, nil
}

func jsonErr(err error) string {
	if te, ok := err.(*json.UnmarshalTypeError); ok {
		return fmt.Sprintf("field %s must be %s, got %s", te.Field, te.Type, te.Value)
	}
	return err.Error()
}

// complete reports whether p names a remote prefill fully (vLLM's
// NixlConnector needs remote_engine_id, remote_host and remote_port;
// remote_block_ids may be empty for a prompt shorter than a block).
func (p *kvParams) complete() bool {
	return p.RemoteEngineID != nil && p.RemoteHost != nil && p.RemotePort != nil
}

// response is what the prefill pod adds to its response.
func handoffJSON(engine, requestID, host string, port int, blockIDs []int, tp int) map[string]any {
	if blockIDs == nil {
		blockIDs = []int{}
	}
	return map[string]any{
		"do_remote_prefill": true, "do_remote_decode": false,
		"remote_engine_id": engine, "remote_request_id": requestID,
		"remote_block_ids": blockIDs, "remote_host": host, "remote_port": port,
		"tp_size": tp,
	}
}

func portOf(hostport string) (string, int) {
	for i := len(hostport) - 1; i >= 0; i-- {
		if hostport[i] == ':' {
			p, _ := strconv.Atoi(hostport[i+1:])
			return hostport[:i], p
		}
	}
	return hostport, 0
}

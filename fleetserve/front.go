package fleetserve

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"

	"github.com/pdemu/pdemu/fleet"
)

// front is a worker endpoint's handler in front of package serve's: it
// answers /health by the worker's state and reads kv_transfer_params.
type front struct {
	s    *fleetServer
	ep   *endpoint
	next http.Handler
}

// maxBody is serve's default body limit.
const maxBody = 8 << 20

func (h *front) state() (fleet.WorkerInfo, bool) {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	wi, ok := h.s.f.Worker(h.ep.name)
	if h.s.closing && wi.State != fleet.StateGone {
		wi.State = fleet.StateDraining
	}
	return wi, ok
}

func (h *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/health":
		wi, _ := h.state()
		if wi.State != fleet.StateReady {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(map[string]string{"status": string(wi.State)})
			return
		}
	case "/v1/chat/completions", "/v1/completions":
		if r.Method == http.MethodPost {
			h.completion(w, r)
			return
		}
	}
	h.next.ServeHTTP(w, r)
}

func (h *front) completion(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		apiErr(w, http.StatusBadRequest, "", "reading the body: %v", err)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var pr probe
	if json.Unmarshal(body, &pr) != nil || len(body) > maxBody {
		h.next.ServeHTTP(w, r) // serve reports malformed or oversized bodies
		return
	}
	kv, err := parseKV(pr.KV)
	if err != nil {
		apiErr(w, http.StatusBadRequest, "kv_transfer_params", "%v", err)
		return
	}
	if pr.KV != nil {
		// kv_transfer_params is this handler's: serve refuses parameters
		// it does not know, so it gets the body without it.
		var m map[string]json.RawMessage
		if json.Unmarshal(body, &m) == nil {
			delete(m, "kv_transfer_params")
			if nb, err := json.Marshal(m); err == nil {
				r.Body = io.NopCloser(bytes.NewReader(nb))
				r.ContentLength = int64(len(nb))
			}
		}
	}
	maxTok := pr.MaxTokens
	if pr.MaxCompletionTokens != nil {
		maxTok = pr.MaxCompletionTokens
	}
	tk := &ticket{}
	switch h.ep.role {
	case fleet.RolePrefill:
		if kv != nil && kv.DoRemotePrefill {
			apiErr(w, http.StatusBadRequest, "kv_transfer_params",
				"%s is a prefill worker: it cannot pull KV (do_remote_prefill); send the decode call to a decode worker", h.ep.name)
			return
		}
		if maxTok == nil || *maxTok != 1 {
			apiErr(w, http.StatusBadRequest, "max_tokens",
				"%s is a prefill worker: it only prefills (max_tokens must be 1, as a P/D proxy sends it, with kv_transfer_params.do_remote_decode to hand the KV to a decode worker)", h.ep.name)
			return
		}
		tk.remoteDecode = kv != nil && kv.DoRemoteDecode
	case fleet.RoleFused:
		if kv != nil && (kv.DoRemoteDecode || kv.DoRemotePrefill) {
			apiErr(w, http.StatusBadRequest, "kv_transfer_params",
				"%s is a fused worker: it serves requests whole, without a P/D hand-off", h.ep.name)
			return
		}
	case fleet.RoleDecode:
		if kv != nil && kv.DoRemoteDecode {
			apiErr(w, http.StatusBadRequest, "kv_transfer_params",
				"%s is a decode worker: do_remote_decode goes to a prefill worker", h.ep.name)
			return
		}
		if kv != nil && kv.DoRemotePrefill {
			if !kv.complete() {
				// vLLM's NixlConnector logs "Got invalid KVTransferParams"
				// and computes the prompt locally.
				h.s.log.Warn("invalid kv_transfer_params: the request prefills locally", "worker", h.ep.name,
					"need", "remote_engine_id, remote_host, remote_port")
			} else {
				tk.pull = h.s.handoffFor(kv)
			}
		}
	}
	ctx := context.WithValue(r.Context(), ticketKey{}, tk)
	r = r.WithContext(ctx)
	if h.ep.role != fleet.RolePrefill || !tk.remoteDecode || (pr.Stream != nil && *pr.Stream) {
		h.next.ServeHTTP(w, r)
		return
	}
	// The prefill call of a hand-off: its response carries the
	// kv_transfer_params for the decode call.
	rec := &bufWriter{h: http.Header{}, status: http.StatusOK}
	h.next.ServeHTTP(rec, r)
	tk.mu.Lock()
	ho := tk.handoff
	tk.mu.Unlock()
	out := rec.buf.Bytes()
	if rec.status == http.StatusOK && ho != nil {
		var m map[string]json.RawMessage
		if json.Unmarshal(out, &m) == nil {
			host, port := portOf(h.ep.ln.Addr().String())
			tp := 1
			if wi, ok := h.state(); ok && wi.Spec.TP > 0 {
				tp = wi.Spec.TP
			}
			b, _ := json.Marshal(handoffJSON(ho.Engine, ho.RequestID, host, port, ho.BlockIDs, tp))
			m["kv_transfer_params"] = b
			if nb, err := json.Marshal(m); err == nil {
				out = append(nb, '\n')
			}
		}
	}
	for k, v := range rec.h {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(rec.status)
	_, _ = w.Write(out)
}

// handoffFor turns a decode call's kv_transfer_params into the fleet's
// Handoff: the engine must be a worker at remote_host:remote_port.
func (s *fleetServer) handoffFor(kv *kvParams) *fleet.Handoff {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := &fleet.Handoff{Engine: *kv.RemoteEngineID, BlockIDs: kv.RemoteBlockIDs}
	if kv.RemoteRequestID != nil {
		h.RequestID = *kv.RemoteRequestID
	}
	ep := s.eps[h.Engine]
	if ep == nil {
		return h // unknown engine: the fleet fails it
	}
	host, port := portOf(ep.ln.Addr().String())
	if *kv.RemoteHost != host || *kv.RemotePort != port {
		h.Engine = "" // nothing at that address: the handshake fails
	}
	return h
}

// bufWriter buffers a response.
type bufWriter struct {
	h      http.Header
	status int
	buf    bytes.Buffer
	wrote  bool
}

func (b *bufWriter) Header() http.Header { return b.h }
func (b *bufWriter) WriteHeader(code int) {
	if !b.wrote {
		b.status, b.wrote = code, true
	}
}
func (b *bufWriter) Write(p []byte) (int, error) {
	b.wrote = true
	return b.buf.Write(p)
}

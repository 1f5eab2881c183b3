package fleetserve

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/pdemu/pdemu/fleet"
	"github.com/pdemu/pdemu/topology"
)

// AdminRequest is the body of POST /admin/workers.
type AdminRequest struct {
	// Action is "add" or "drain".
	Action string `json:"action"`
	Name   string `json:"name"`
	// add: the role ("prefill" or "decode"), the worker whose links and
	// settings the new one copies ("" = the first of its role), and
	// optional GPU and model presets.
	Role  string `json:"role,omitempty"`
	Like  string `json:"like,omitempty"`
	GPU   string `json:"gpu,omitempty"`
	Model string `json:"model,omitempty"`
	TP    int    `json:"tp,omitempty"`
}

func (s *fleetServer) adminMux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/admin/workers", func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			s.mu.Lock()
			l := s.listing()
			s.mu.Unlock()
			writeJSON(w, http.StatusOK, l)
		case http.MethodPost:
			s.adminPost(w, r)
		default:
			w.Header().Set("Allow", "GET, POST")
			apiErr(w, http.StatusMethodNotAllowed, "", "%s /admin/workers: use GET or POST", r.Method)
		}
	})
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		apiErr(w, http.StatusNotFound, "", "no such endpoint: %s %s (the admin API is GET/POST /admin/workers)", r.Method, r.URL.Path)
	})
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func (s *fleetServer) adminPost(w http.ResponseWriter, r *http.Request) {
	var req AdminRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		apiErr(w, http.StatusBadRequest, "", "POST /admin/workers: %v (body: {\"action\":\"add\"|\"drain\",\"name\":...})", err)
		return
	}
	if req.Name == "" {
		apiErr(w, http.StatusBadRequest, "name", "name is missing")
		return
	}
	switch req.Action {
	case "add":
		s.adminAdd(w, req)
	case "drain":
		s.mu.Lock()
		err := s.f.Drain(s.emulated(), req.Name)
		if err == nil {
			s.dispatch(s.f.Now())
		}
		l := s.listing()
		s.mu.Unlock()
		s.kick()
		switch {
		case errors.Is(err, fleet.ErrUnknownWorker):
			apiErr(w, http.StatusNotFound, "name", "%v", err)
		case errors.Is(err, fleet.ErrGone):
			apiErr(w, http.StatusConflict, "name", "%v", err)
		case err != nil:
			apiErr(w, http.StatusBadRequest, "", "%v", err)
		default:
			writeJSON(w, http.StatusAccepted, l)
		}
	default:
		apiErr(w, http.StatusBadRequest, "action", "action must be \"add\" or \"drain\", got %q", req.Action)
	}
}

func (s *fleetServer) adminAdd(w http.ResponseWriter, req AdminRequest) {
	role := fleet.Role(strings.ToLower(req.Role))
	if role != fleet.RolePrefill && role != fleet.RoleDecode {
		apiErr(w, http.StatusBadRequest, "role", "role must be \"prefill\" or \"decode\", got %q", req.Role)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		apiErr(w, http.StatusServiceUnavailable, "", "the fleet is shutting down")
		return
	}
	kind := topology.KindDecode
	if role == fleet.RolePrefill {
		kind = topology.KindPrefill
	}
	tw := topology.Worker{Name: req.Name, Kind: kind, GPU: req.GPU, Model: req.Model, TP: req.TP}
	if err := s.f.Add(s.emulated(), tw, role, req.Like); err != nil {
		status := http.StatusBadRequest
		if errors.Is(err, fleet.ErrUnknownWorker) {
			status = http.StatusNotFound
		}
		apiErr(w, status, "", "%v", err)
		return
	}
	wi, _ := s.f.Worker(req.Name)
	if err := s.open(wi); err != nil {
		// The worker exists in the fleet but cannot be reached: drain it at
		// once so it leaves (nothing was sent to it).
		_ = s.f.Drain(s.f.Now(), req.Name)
		s.dispatch(s.f.Now())
		apiErr(w, http.StatusInternalServerError, "", "worker %s: %v", req.Name, err)
		return
	}
	s.dispatch(s.f.Now())
	s.writeListing()
	s.kick()
	for _, e := range s.listing().Workers {
		if e.Worker == req.Name {
			writeJSON(w, http.StatusCreated, e)
			return
		}
	}
	apiErr(w, http.StatusInternalServerError, "", "worker %s was added but is not listed", req.Name)
}

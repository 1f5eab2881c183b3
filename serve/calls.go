package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/pdemu/pdemu/internal/splitmix"
	"github.com/pdemu/pdemu/metrics"
	"github.com/pdemu/pdemu/workload"
)

// call is one parsed request, ready for the cluster.
type call struct {
	chat         bool
	model        string
	text         string // the serialised prompt
	sessionKey   string
	maxTokens    *int
	maxParam     string // the parameter maxTokens came from
	minTokens    int
	stream       bool
	includeUsage bool
	n            int
	stops        []string
	logprobs     bool
	topLogprobs  int
	requestID    string
}

// decodeChecked decodes body into v, then runs checks in order, then
// checks the request's model (model points into v); false when it wrote
// the first error to w. Every endpoint that takes a JSON body opens with it,
// so the errors come in the same order everywhere.
func (s *Server) decodeChecked(w http.ResponseWriter, body []byte, v any, model *string, checks ...func() *apiError) bool {
	if e := decodeJSON(body, v); e != nil {
		s.fail(w, e)
		return false
	}
	for _, check := range checks {
		if e := check(); e != nil {
			s.fail(w, e)
			return false
		}
	}
	if e := s.checkCommon(*model); e != nil {
		s.fail(w, e)
		return false
	}
	return true
}

func (s *Server) checkCommon(model string) *apiError {
	if model == "" {
		return badRequest("model", "", "model is missing (this server serves %q)", s.opts.Model)
	}
	if model != s.opts.Model {
		return &apiError{Status: http.StatusNotFound,
			Message: fmt.Sprintf("the model %q does not exist (this server serves %q)", model, s.opts.Model),
			Param:   strp("model"), Reason: "model_not_found"}
	}
	return nil
}

// common reads what chat and completion requests share into c.
func (c *call) common(stream *bool, so *streamOptions, n *int, stop json.RawMessage, minTokens *int) *apiError {
	c.stream = stream != nil && *stream
	if so != nil && !c.stream {
		return badRequest("stream_options", "", "stream_options can only be set when stream is true")
	}
	c.includeUsage = so != nil && so.IncludeUsage
	c.n = 1
	if n != nil {
		c.n = *n
	}
	var e *apiError
	if c.stops, e = stopStrings(stop); e != nil {
		return e
	}
	if minTokens != nil {
		c.minTokens = *minTokens
		if c.maxTokens != nil && c.minTokens > *c.maxTokens {
			return badRequest("min_tokens", "invalid_value", "min_tokens (%d) must be at most %s (%d)", c.minTokens, c.maxParam, *c.maxTokens)
		}
	}
	return nil
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request, body []byte) {
	var req chatRequest
	if !s.decodeChecked(w, body, &req, &req.Model, func() *apiError { return checkParams(body, true, s.opts.ExtraParams) }) {
		return
	}
	msgs, e := req.messages()
	if e != nil {
		s.fail(w, e)
		return
	}
	c := call{chat: true, model: req.Model, text: chatTemplate(msgs), maxTokens: req.MaxTokens, maxParam: "max_tokens"}
	if req.MaxCompletionTokens != nil {
		c.maxTokens, c.maxParam = req.MaxCompletionTokens, "max_completion_tokens"
	}
	if e := c.common(req.Stream, req.StreamOptions, req.N, req.Stop, req.MinTokens); e != nil {
		s.fail(w, e)
		return
	}
	c.logprobs = req.Logprobs != nil && *req.Logprobs
	if req.TopLogprobs != nil {
		if !c.logprobs && *req.TopLogprobs > 0 {
			s.fail(w, badRequest("top_logprobs", "invalid_value", "top_logprobs needs logprobs to be true"))
			return
		}
		c.topLogprobs = *req.TopLogprobs
	}
	c.sessionKey = sessionKey(r, req.User, func() string {
		// The conversation's opening: every message up to and including
		// the first user message.
		for i, m := range msgs {
			if m.Role == "user" {
				return chatTemplate(msgs[:i+1])
			}
		}
		return chatTemplate(msgs[:1])
	})
	s.serve(w, r, c)
}

func (s *Server) completion(w http.ResponseWriter, r *http.Request, body []byte) {
	var req completionRequest
	if !s.decodeChecked(w, body, &req, &req.Model, func() *apiError { return checkParams(body, false, s.opts.ExtraParams) }) {
		return
	}
	text, e := promptText(req.Prompt)
	if e != nil {
		s.fail(w, e)
		return
	}
	c := call{model: req.Model, text: text, maxTokens: req.MaxTokens, maxParam: "max_tokens"}
	if e := c.common(req.Stream, req.StreamOptions, req.N, req.Stop, req.MinTokens); e != nil {
		s.fail(w, e)
		return
	}
	if req.Logprobs != nil {
		c.logprobs, c.topLogprobs = true, *req.Logprobs
	}
	c.sessionKey = sessionKey(r, req.User, func() string {
		// A bare prompt's opening: its first 16 blocks' worth of bytes.
		return text[:min(len(text), 16*24*BytesPerToken)]
	})
	s.serve(w, r, c)
}

// sessionKey is X-Session-Id, else the user field, else the conversation's
// opening (hashed).
func sessionKey(r *http.Request, user *string, opening func() string) string {
	if h := r.Header.Get("X-Session-Id"); h != "" {
		return "h:" + h
	}
	if user != nil && *user != "" {
		return "u:" + *user
	}
	return fmt.Sprintf("p:%016x", hashString(opening()))
}

// choice is one of a request's n sequences: its own emulated request.
type choice struct {
	req      *workload.Request
	seed     uint64
	finish   string
	stopAt   int // stop: bytes of the visible text (-1: no stop string hit)
	produced int
	first    Event
	end      Event
	ended    bool
	prev     time.Duration
	lps      []tokenLogprob // logprobs so far (non-streaming)
	// late: how late (wall) the client got the first token, once sent.
	late    time.Duration
	lateSet bool
	// firstAt, endAt: when the first token's bytes and the response's
	// last ones were written to the client (zero: never).
	firstAt, endAt time.Time
}

// lateReporter is what a Cluster that runs on a wall clock tells of the
// lateness clients see (Bridge implements it).
type lateReporter interface {
	Late(at time.Duration) time.Duration
	Served(first, end time.Duration)
}

// visible returns the text of output token i as the client sees it
// (stop strings and what follows them are cut).
func (ch *choice) visible(i int) string {
	t := fillerToken(ch.seed, i)
	if ch.stopAt < 0 {
		return t
	}
	lo := i * BytesPerToken
	if lo >= ch.stopAt {
		return ""
	}
	return t[:min(len(t), ch.stopAt-lo)]
}

// applyStop finds the first stop string in the emulated text of up to
// out tokens: the sequence then ends with the token that completes it
// (finish_reason "stop") and the text is cut before it, as vLLM does.
func applyStop(seed uint64, out int, stops []string) (tokens, stopAt int) {
	if len(stops) == 0 {
		return out, -1
	}
	text := fillerText(seed, out)
	at, end := -1, 0
	for _, s := range stops {
		if i := strings.Index(text, s); i >= 0 && (at < 0 || i < at) {
			at, end = i, i+len(s)
		}
	}
	if at < 0 {
		return out, -1
	}
	return (end + BytesPerToken - 1) / BytesPerToken, at
}

// serve builds the request (one per choice), submits it and relays its
// events.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, c call) {
	c.requestID = r.Header.Get("X-Request-Id")
	if c.requestID == "" {
		c.requestID = s.newID()
	}
	w.Header().Set("X-Request-Id", c.requestID)
	in := TokenCount(len(c.text))
	if in == 0 {
		s.fail(w, badRequest("prompt", "", "the prompt is empty"))
		return
	}
	finish := "stop"
	var out int
	if c.maxTokens != nil {
		out, finish = *c.maxTokens, "length"
	} else {
		out = min(defaultOutputLen(s.opts.DefaultOutputTokens, hashString(c.text)), max(1, s.opts.MaxModelLen-in))
	}
	out = max(out, c.minTokens)
	if in+out > s.opts.MaxModelLen {
		s.fail(w, contextTooLong(s.opts.MaxModelLen, in, out))
		return
	}
	salt := hashString("model:" + c.model)
	blocks := blockHashes(c.text, s.opts.BlockTokens, salt)
	chs := make([]*choice, c.n)
	for i := range chs {
		seed := hashString(c.text) ^ splitmix.Mix64(s.seq.Add(1)^s.launch)
		n, stopAt := applyStop(seed, out, c.stops)
		n = max(n, c.minTokens)
		f := finish
		if stopAt >= 0 {
			f = "stop"
		}
		var req *workload.Request
		if i == 0 {
			req = s.sess.build(c.sessionKey, c.text, in, n, blocks, s.opts.BlockTokens)
		} else {
			// The other sequences share the prompt (its KV is a prefix
			// cache hit) as requests of their own.
			req = s.sess.extra(in, n, blocks, s.opts.BlockTokens)
		}
		chs[i] = &choice{req: req, seed: seed, finish: f, stopAt: stopAt}
	}
	// Cancelled when the client goes away, or stops reading (a write
	// fails): the cluster aborts the request.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	streams := make([]<-chan Event, len(chs))
	for i, ch := range chs {
		ev, err := s.cl.Submit(ctx, ch.req)
		if err != nil {
			for j, prev := range streams[:i] {
				go drain(prev) // the ones submitted run to their end
				if cr, ok := s.cl.(clientReporter); ok {
					cr.Client(chs[j].req.ID, metrics.ClientTimes{}) // their client gets none of it
				}
			}
			s.fail(w, &apiError{Status: http.StatusServiceUnavailable, Message: "the cluster did not accept the request: " + err.Error(), Reason: "cluster_unavailable"})
			return
		}
		streams[i] = ev
	}
	rl := &relay{s: s, w: w, r: r, c: c, choices: chs, created: time.Now().Unix(), cancel: cancel, arrived: arrivedAt(r)}
	rl.run(merge(streams))
}

func drain(ch <-chan Event) {
	for range ch {
	}
}

// indexed is an event of choice i.
type indexed struct {
	i  int
	ev Event
}

// merge forwards the events of every stream, tagged with its index, to
// one channel closed after the last.
func merge(streams []<-chan Event) <-chan indexed {
	out := make(chan indexed, 64)
	done := make(chan struct{}, len(streams))
	for i, st := range streams {
		go func() {
			for ev := range st {
				out <- indexed{i, ev}
			}
			done <- struct{}{}
		}()
	}
	go func() {
		for range streams {
			<-done
		}
		close(out)
	}()
	return out
}

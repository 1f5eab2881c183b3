package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/pdemu/pdemu/internal/splitmix"

	"github.com/pdemu/pdemu/gpu"
	"github.com/pdemu/pdemu/workload"
)

// ---------------------------------------------------------------- requests

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

func (s *Server) checkCommon(model string) *apiError {
	if model == "" {
		return badRequest("model", "", "model is missing (this server serves %q)", s.opts.Model)
	}
	if model != s.opts.Model {
		return &apiError{Status: http.StatusNotFound, Type: "invalid_request_error",
			Message: fmt.Sprintf("the model %q does not exist (this server serves %q)", model, s.opts.Model),
			Param:   strp("model"), Code: strp("model_not_found")}
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
	if e := decodeJSON(body, &req); e != nil {
		s.fail(w, e)
		return
	}
	if e := checkParams(body, true, s.opts.ExtraParams); e != nil {
		s.fail(w, e)
		return
	}
	if e := s.checkCommon(req.Model); e != nil {
		s.fail(w, e)
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
	if e := decodeJSON(body, &req); e != nil {
		s.fail(w, e)
		return
	}
	if e := checkParams(body, false, s.opts.ExtraParams); e != nil {
		s.fail(w, e)
		return
	}
	if e := s.checkCommon(req.Model); e != nil {
		s.fail(w, e)
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
			for _, prev := range streams[:i] {
				go drain(prev) // the ones submitted run to their end
			}
			s.fail(w, &apiError{Status: http.StatusServiceUnavailable, Type: "server_error",
				Message: "the cluster did not accept the request: " + err.Error(), Code: strp("cluster_unavailable")})
			return
		}
		streams[i] = ev
	}
	rl := &relay{s: s, w: w, r: r, c: c, choices: chs, created: time.Now().Unix(), cancel: cancel}
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

// relay writes one request's events to its client and records them.
type relay struct {
	s       *Server
	w       http.ResponseWriter
	r       *http.Request
	c       call
	choices []*choice
	created int64

	rc      *http.ResponseController
	started bool // response headers written
	gone    bool // the client went away or stopped reading
	cancel  func()
}

// lost marks the client gone and has the cluster abort the request.
func (rl *relay) lost() {
	rl.gone = true
	rl.cancel()
}

func (rl *relay) id() string {
	if rl.c.chat {
		return "chatcmpl-" + rl.c.requestID
	}
	return "cmpl-" + rl.c.requestID
}

func (rl *relay) object() string {
	switch {
	case rl.c.chat && rl.c.stream:
		return "chat.completion.chunk"
	case rl.c.chat:
		return "chat.completion"
	}
	return "text_completion"
}

func (rl *relay) base() response {
	return response{ID: rl.id(), Object: rl.object(), Created: rl.created, Model: rl.c.model, SystemFingerprint: "pdemu"}
}

// run consumes every event to the end, whatever happens to the client.
func (rl *relay) run(events <-chan indexed) {
	rl.rc = http.NewResponseController(rl.w)
	for ie := range events {
		ch, ev := rl.choices[ie.i], ie.ev
		switch ev.Kind {
		case EvToken:
			rl.s.met.Token(ev, ch.prev)
			ch.prev = ev.Since
			if ev.Index == 0 {
				ch.first = ev
			}
			ch.produced++
			if rl.c.stream {
				// Flush when nothing else is pending: a burst of due
				// tokens goes out in one write.
				rl.chunk(ie.i, ev.Index, len(events) == 0 || ev.Index == 0)
				if ev.Index == 0 {
					rl.markLate(ch, ev.Emulated)
				}
			} else if rl.c.logprobs {
				ch.lps = append(ch.lps, rl.logprob(ch, ev.Index))
			}
		case EvDone, EvFailed:
			ch.end, ch.ended = ev, true
		}
	}
	if !rl.gone {
		select {
		case <-rl.r.Context().Done():
			rl.gone = true
		default:
		}
	}
	var failed *choice
	aborted := false
	for _, ch := range rl.choices {
		switch {
		case !ch.ended:
			// The cluster closed the channel without an end: its contract
			// is broken; report it rather than hang or pretend.
			rl.s.met.Failed("no-end-event")
			ch.end = Event{Kind: EvFailed, Reason: "the cluster ended the request without a result"}
			failed = ch
		case ch.end.Kind == EvDone:
			rl.s.met.Done(ch.end, ch.req.InputLen, ch.req.OutputLen, ch.finish)
		case ch.end.Reason == gpu.ReasonAborted:
			// The client went away and the cluster aborted it.
			rl.s.met.Aborted(ch.end)
			aborted = true
		default:
			rl.s.met.Failed(ch.end.Reason)
			if failed == nil {
				failed = ch
			}
		}
	}
	switch {
	case aborted:
		rl.gone = true
	case failed != nil:
		rl.failed(failed.end)
	default:
		rl.done()
		if lr, ok := rl.s.cl.(lateReporter); ok && !rl.gone {
			for _, ch := range rl.choices {
				end := lr.Late(ch.end.Emulated)
				if !ch.lateSet { // not streamed: the first token came with the end
					ch.late = end
				}
				lr.Served(ch.late, end)
				rl.s.met.Late("first_token", ch.late)
				rl.s.met.Late("end", end)
			}
		}
	}
	if rl.gone {
		rl.s.met.disconnects.Inc()
	}
}

func (rl *relay) deadline() {
	_ = rl.rc.SetWriteDeadline(time.Now().Add(rl.s.opts.WriteTimeout))
}

func (rl *relay) startStream() {
	if rl.started {
		return
	}
	rl.started = true
	h := rl.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	rl.deadline()
	rl.w.WriteHeader(http.StatusOK)
}

// sse writes one data: line and flushes it.
func (rl *relay) sse(v any) { rl.write(v, true) }

// write writes one data: line, flushing it if flush is set.
func (rl *relay) write(v any, flush bool) {
	if rl.gone {
		return
	}
	select {
	case <-rl.r.Context().Done():
		rl.gone = true
		return
	default:
	}
	rl.startStream()
	var b []byte
	if s, ok := v.(string); ok {
		b = []byte(s)
	} else {
		b, _ = json.Marshal(v)
	}
	rl.deadline()
	if _, err := fmt.Fprintf(rl.w, "data: %s\n\n", b); err != nil {
		rl.lost()
		return
	}
	if !flush {
		return
	}
	if err := rl.rc.Flush(); err != nil {
		rl.lost()
	}
}

// chunk streams output token i of choice c (nothing when a stop string
// cut it).
func (rl *relay) chunk(c, i int, flush bool) {
	ch := rl.choices[c]
	text := ch.visible(i)
	if text == "" && i > 0 {
		return
	}
	resp := rl.base()
	cc := chatChoice{Index: c}
	if rl.c.chat {
		cc.Delta = &chatOut{Content: &text}
		if i == 0 {
			cc.Delta.Role = "assistant"
		}
	} else {
		cc.Text = &text
	}
	if rl.c.logprobs {
		cc.Logprobs = rl.logprobsOf([]tokenLogprob{rl.logprob(ch, i)}, i*BytesPerToken)
	}
	resp.Choices = []chatChoice{cc}
	rl.write(resp, flush)
}

// markLate records how late the client got choice ch's first token (of
// emulated time at), as it is sent.
func (rl *relay) markLate(ch *choice, at time.Duration) {
	if lr, ok := rl.s.cl.(lateReporter); ok && !ch.lateSet {
		ch.late, ch.lateSet = lr.Late(at), true
	}
}

func (rl *relay) info(ch *choice) *pdemuInfo {
	p := &pdemuInfo{Session: ch.req.SessionName, Turn: ch.req.Turn, Mode: ch.end.Mode, Worker: ch.end.Worker,
		Prefill: ch.end.Prefill, TTFT: ch.first.Since.Seconds(), E2E: ch.end.Since.Seconds(), AppendLen: ch.req.AppendLen}
	if ch.lateSet {
		p.ServedLateMS = float64(ch.late.Microseconds()) / 1e3
	}
	return p
}

func (rl *relay) usage() *usage {
	first := rl.choices[0]
	u := &usage{PromptTokens: first.req.InputLen, PromptTokensDetails: promptDetail{CachedTokens: first.end.CachedTokens}}
	for _, ch := range rl.choices {
		u.CompletionTokens += ch.produced
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

// text is the whole visible text of a choice.
func (ch *choice) text() string {
	if ch.stopAt >= 0 {
		t := fillerText(ch.seed, ch.produced)
		return t[:min(len(t), ch.stopAt)]
	}
	return fillerText(ch.seed, ch.produced)
}

func (rl *relay) done() {
	if rl.c.stream {
		for i, ch := range rl.choices {
			finish := ch.finish
			resp := rl.base()
			cc := chatChoice{Index: i, FinishReason: &finish}
			empty := ""
			if rl.c.chat {
				cc.Delta = &chatOut{}
			} else {
				cc.Text = &empty
			}
			resp.Choices = []chatChoice{cc}
			resp.Pdemu = rl.info(ch)
			rl.sse(resp)
		}
		if rl.c.includeUsage {
			u := rl.base()
			u.Choices = []chatChoice{}
			u.Usage = rl.usage()
			rl.sse(u)
		}
		rl.sse("[DONE]")
		return
	}
	if rl.gone {
		return
	}
	resp := rl.base()
	for i, ch := range rl.choices {
		finish := ch.finish
		text := ch.text()
		cc := chatChoice{Index: i, FinishReason: &finish}
		if rl.c.chat {
			cc.Message = &chatOut{Role: "assistant", Content: &text}
		} else {
			cc.Text = &text
		}
		if rl.c.logprobs {
			cc.Logprobs = rl.logprobsOf(ch.lps, 0)
		}
		resp.Choices = append(resp.Choices, cc)
	}
	resp.Usage = rl.usage()
	resp.Pdemu = rl.info(rl.choices[0])
	rl.w.Header().Set("Content-Type", "application/json")
	rl.deadline()
	if err := json.NewEncoder(rl.w).Encode(resp); err != nil {
		rl.gone = true
	}
}

func (rl *relay) failed(end Event) {
	e := &apiError{Status: http.StatusInternalServerError, Type: "server_error",
		Message: "the emulated cluster failed the request: " + end.Reason, Code: strp("request_failed")}
	switch {
	case end.Reason == gpu.ReasonExceedsPool || end.Reason == gpu.ReasonExceedsContext:
		first := rl.choices[0].req
		e = contextTooLong(rl.s.opts.MaxModelLen, first.InputLen, first.OutputLen)
		e.Message += " (" + end.Reason + ")"
	case end.Fault:
		// A crash or a cut link lost it and the retries did not save it:
		// what a client of a real fleet sees when its replica dies.
		e.Status, e.Code = http.StatusServiceUnavailable, strp("service_unavailable")
		e.Message = "the emulated cluster lost the request to a fault; retry: " + end.Reason
	}
	if rl.started {
		// Mid-stream: the status is sent; report the error as an event.
		rl.sse(struct {
			Error *apiError `json:"error"`
		}{e})
		rl.sse("[DONE]")
		return
	}
	if rl.gone {
		return
	}
	rl.deadline()
	rl.s.fail(rl.w, e)
}

// ---------------------------------------------------------------- logprobs

// tokenLogprob is one output token's synthetic log-probability and its
// alternatives: well-formed (the chosen token first, log-probabilities
// ≤ 0 and decreasing) but not a model's.
type tokenLogprob struct {
	Token       string       `json:"token"`
	Logprob     float64      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []topLogprob `json:"top_logprobs"`
}

type topLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

func tokenBytes(t string) []int {
	b := make([]int, len(t))
	for i := range len(t) {
		b[i] = int(t[i])
	}
	return b
}

func (rl *relay) logprob(ch *choice, i int) tokenLogprob {
	tok := ch.visible(i)
	h := splitmix.Mix64(ch.seed ^ uint64(i+1)*0x9e3779b97f4a7c15)
	lp := -float64(h%2000) / 1000 // in (-2, 0]
	out := tokenLogprob{Token: tok, Logprob: lp, Bytes: tokenBytes(tok), TopLogprobs: []topLogprob{}}
	if rl.c.topLogprobs > 0 {
		out.TopLogprobs = append(out.TopLogprobs, topLogprob{tok, lp, tokenBytes(tok)})
		for k := 1; len(out.TopLogprobs) < rl.c.topLogprobs; k++ {
			alt := fillerWords[(h+uint64(k))%uint64(len(fillerWords))]
			if alt == tok {
				continue
			}
			l := lp - float64(k)*0.5
			out.TopLogprobs = append(out.TopLogprobs, topLogprob{alt, math.Round(l*1000) / 1000, tokenBytes(alt)})
		}
	}
	return out
}

// logprobsOf is a choice's logprobs object: chat's {"content": [...]} or
// the completions API's parallel lists, from text offset off.
func (rl *relay) logprobsOf(lps []tokenLogprob, off int) any {
	if rl.c.chat {
		return map[string]any{"content": lps}
	}
	type completionLogprobs struct {
		Tokens        []string             `json:"tokens"`
		TokenLogprobs []float64            `json:"token_logprobs"`
		TopLogprobs   []map[string]float64 `json:"top_logprobs"`
		TextOffset    []int                `json:"text_offset"`
	}
	c := completionLogprobs{Tokens: []string{}, TokenLogprobs: []float64{}, TopLogprobs: []map[string]float64{}, TextOffset: []int{}}
	for _, t := range lps {
		c.Tokens = append(c.Tokens, t.Token)
		c.TokenLogprobs = append(c.TokenLogprobs, t.Logprob)
		top := map[string]float64{}
		for _, a := range t.TopLogprobs {
			top[a.Token] = a.Logprob
		}
		c.TopLogprobs = append(c.TopLogprobs, top)
		c.TextOffset = append(c.TextOffset, off)
		off += len(t.Token)
	}
	return c
}

package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/pdemu/pdemu/gpu"
)

// ---------------------------------------------------------------- requests

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
	arrived time.Time // the request reached the handler
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
					if !rl.gone {
						ch.firstAt = time.Now()
					}
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
	if cr, ok := rl.s.cl.(clientReporter); ok {
		scale := cr.TimeScale()
		for _, ch := range rl.choices {
			c := clientTimes(ch, rl.arrived, rl.c.stream, scale)
			if c.HasLate {
				rl.s.met.Late("client", c.Late)
			}
			cr.Client(ch.req.ID, c)
		}
	}
}

// wrote notes that the response's last bytes reached the client now (and,
// not streamed, its first token with them), and frees the admission slot
// if the last write did not (a streamed answer frees it just before its
// data: [DONE]; a non-streamed one reaches the client only once the
// handler returns).
func (rl *relay) wrote() {
	if rl.gone {
		return
	}
	now := time.Now()
	releaseSlot(rl.r)
	for _, ch := range rl.choices {
		if ch.firstAt.IsZero() && !rl.c.stream && ch.ended && ch.end.Kind == EvDone {
			ch.firstAt = now
		}
		ch.endAt = now
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
		rl.endStream()
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
	rl.wrote()
}

// endStream ends a stream: the admission slot is freed before the last bytes
// go out (a client that sends its next request at [DONE] must find it
// free), then [DONE].
func (rl *relay) endStream() {
	releaseSlot(rl.r)
	rl.sse("[DONE]")
	rl.wrote()
}

func (rl *relay) failed(end Event) {
	e := &apiError{Status: http.StatusInternalServerError, Message: "the emulated cluster failed the request: " + end.Reason, Reason: "request_failed"}
	switch {
	case end.Reason == gpu.ReasonExceedsPool || end.Reason == gpu.ReasonExceedsContext:
		first := rl.choices[0].req
		e = contextTooLong(rl.s.opts.MaxModelLen, first.InputLen, first.OutputLen)
		e.Message += " (" + end.Reason + ")"
	case end.Fault:
		// A crash or a cut link lost it and the retries did not save it:
		// what a client of a real fleet sees when its replica dies.
		e.Status, e.Reason = http.StatusServiceUnavailable, "service_unavailable"
		e.Message = "the emulated cluster lost the request to a fault; retry: " + end.Reason
	}
	if rl.started {
		// Mid-stream: the status is sent; report the error as an event.
		rl.sse(e.envelope())
		rl.endStream()
		return
	}
	if rl.gone {
		return
	}
	rl.deadline()
	rl.s.fail(rl.w, e)
	rl.wrote()
}

// ---------------------------------------------------------------- logprobs

package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// apiError is an error answer. Its body is vLLM's ErrorResponse
// (vllm/entrypoints/openai/protocol.py: {"error": ErrorInfo}, ErrorInfo
// being message, type, param and an integer code, the HTTP status): Type
// and the code are derived from Status when the error is written (see
// envelope), as vLLM's create_error_response does. Reason is pdemu's
// finer cause ("invalid_value", "model_not_found", ...): the
// pdemu_http_errors_total label, not part of the body, which vLLM does
// not have.
type apiError struct {
	Status  int
	Message string
	Param   *string
	Reason  string
}

func (e *apiError) Error() string { return e.Message }

// errorInfo is vLLM's ErrorInfo.
type errorInfo struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

// envelope is e as vLLM writes it: {"error": ErrorInfo}.
func (e *apiError) envelope() any {
	return struct {
		Error errorInfo `json:"error"`
	}{errorInfo{Message: e.Message, Type: errType(e.Status), Param: e.Param, Code: e.Status}}
}

// ErrorBody is vLLM's error body for an answer with this status, param
// ("" for none) and message: what pdemu serve writes, for the fleet's
// endpoints to write the same.
func ErrorBody(status int, param, message string) any {
	return (&apiError{Status: status, Message: message, Param: strp(param)}).envelope()
}

// errType is vLLM's err_type for an HTTP status: the status text in
// CamelCase with "Error" appended (400 BadRequestError, 404 NotFoundError,
// 500 InternalServerError, 503 ServiceUnavailableError).
func errType(status int) string {
	t := strings.ReplaceAll(http.StatusText(status), " ", "")
	if t == "" {
		t = "Unknown"
	}
	if !strings.HasSuffix(t, "Error") {
		t += "Error"
	}
	return t
}

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// contextTooLong is vLLM's error for a prompt + output over the model's
// length (vllm/entrypoints/openai/serving_engine.py).
func contextTooLong(maxLen, in, out int) *apiError {
	return &apiError{Status: http.StatusBadRequest, Param: strp("messages"), Reason: "context_length_exceeded",
		Message: fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
			maxLen, in+out, in, out)}
}

func badRequest(param, code, format string, a ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Message: fmt.Sprintf(format, a...), Param: strp(param), Reason: code}
}

// chatMessage is a message with its content flattened to text.
type chatMessage struct {
	Role    string
	Content string
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// chatRequest is the part of a chat completion request pdemu reads; the
// other parameters are checked by checkParams (params.go): validated
// no-ops or refused, never ignored.
type chatRequest struct {
	Model               string            `json:"model"`
	Messages            []json.RawMessage `json:"messages"`
	MaxTokens           *int              `json:"max_tokens"`
	MaxCompletionTokens *int              `json:"max_completion_tokens"`
	MinTokens           *int              `json:"min_tokens"`
	Stream              *bool             `json:"stream"`
	StreamOptions       *streamOptions    `json:"stream_options"`
	User                *string           `json:"user"`
	N                   *int              `json:"n"`
	Stop                json.RawMessage   `json:"stop"`
	Logprobs            *bool             `json:"logprobs"`
	TopLogprobs         *int              `json:"top_logprobs"`
}

type rawMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type contentPart struct {
	Type string  `json:"type"`
	Text *string `json:"text"`
}

// completionRequest is the part of a (legacy) completion request pdemu reads.
// It repeats chatRequest's shared fields on purpose: an embedded struct
// would make encoding/json name a mistyped field "common.max_tokens" in
// the 400 decodeJSON writes; call.common reads the shared fields once.
type completionRequest struct {
	Model         string          `json:"model"`
	Prompt        json.RawMessage `json:"prompt"`
	MaxTokens     *int            `json:"max_tokens"`
	MinTokens     *int            `json:"min_tokens"`
	Stream        *bool           `json:"stream"`
	StreamOptions *streamOptions  `json:"stream_options"`
	User          *string         `json:"user"`
	N             *int            `json:"n"`
	Stop          json.RawMessage `json:"stop"`
	Logprobs      *int            `json:"logprobs"`
}

// decodeJSON unmarshals body into v, turning JSON errors into 400s that
// name the offending field or byte offset.
func decodeJSON(body []byte, v any) *apiError {
	if len(strings.TrimSpace(string(body))) == 0 {
		return badRequest("", "", "the request body is empty; expected a JSON object")
	}
	err := json.Unmarshal(body, v)
	if err == nil {
		return nil
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return badRequest("", "invalid_json", "malformed JSON at byte offset %d: %v", se.Offset, se)
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			return badRequest("", "invalid_type", "the request body must be a JSON object, not a JSON %s", te.Value)
		}
		return badRequest(field, "invalid_type", "%s: expected %s, got a JSON %s", field, jsonKind(te.Type.String()), te.Value)
	default:
		return badRequest("", "invalid_json", "malformed JSON: %v", err)
	}
}

func jsonKind(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case strings.Contains(goType, "int"):
		return "an integer"
	case strings.Contains(goType, "bool"):
		return "a boolean"
	case goType == "string" || goType == "*string":
		return "a string"
	case strings.Contains(goType, "RawMessage"):
		return "a value"
	}
	return "an object"
}

// messages flattens the chat messages to role + text.
func (r *chatRequest) messages() ([]chatMessage, *apiError) {
	if len(r.Messages) == 0 {
		return nil, badRequest("messages", "", "messages must be a non-empty array")
	}
	out := make([]chatMessage, len(r.Messages))
	for i, raw := range r.Messages {
		p := fmt.Sprintf("messages[%d]", i)
		var m rawMessage
		if e := decodeJSON(raw, &m); e != nil {
			e.Param = strp(p)
			if e.Reason == "invalid_type" {
				e.Message = p + ": " + e.Message
			}
			return nil, e
		}
		if m.Role == "" {
			return nil, badRequest(p+".role", "", "%s.role is missing", p)
		}
		if !chatRoles[m.Role] {
			why := "roles are system, developer, user and assistant"
			if m.Role == "tool" || m.Role == "function" {
				why = "tool and function messages need tool calling, which pdemu does not emulate"
			}
			return nil, badRequest(p+".role", "invalid_value", "%s.role %q is not supported: %s", p, m.Role, why)
		}
		text, err := contentText(m.Content)
		if err != "" {
			return nil, badRequest(p+".content", "invalid_type", "%s.content: %s", p, err)
		}
		out[i] = chatMessage{Role: m.Role, Content: text}
	}
	return out, nil
}

// contentText reads a message content: a string, null, or an array of
// text parts. Non-text parts (images, audio, files) are refused: pdemu
// cannot count their tokens.
func contentText(raw json.RawMessage) (string, string) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return "", ""
	}
	switch s[0] {
	case '"':
		var t string
		if err := json.Unmarshal(raw, &t); err != nil {
			return "", err.Error()
		}
		return t, ""
	case '[':
		var parts []contentPart
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", "expected a string or an array of {\"type\":\"text\",\"text\":...} parts"
		}
		var b strings.Builder
		for i, p := range parts {
			if p.Type != "text" || p.Text == nil {
				return "", fmt.Sprintf("part %d has type %q; only text parts are supported", i, p.Type)
			}
			b.WriteString(*p.Text)
		}
		return b.String(), ""
	}
	return "", "expected a string or an array of text parts"
}

// promptText reads a completion prompt: a string or an array of exactly one
// string. (Token-id prompts are refused: they would need the model's
// vocabulary to be re-sent as text.)
func promptText(raw json.RawMessage) (string, *apiError) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return "", badRequest("prompt", "", "prompt is missing")
	}
	if s[0] == '"' {
		var t string
		if err := json.Unmarshal(raw, &t); err != nil {
			return "", badRequest("prompt", "invalid_type", "prompt: %v", err)
		}
		return t, nil
	}
	var arr []string
	if err := json.Unmarshal(raw, &arr); err != nil || len(arr) != 1 {
		return "", badRequest("prompt", "invalid_type", "prompt must be a string or an array of exactly one string (batched and token-id prompts are not supported)")
	}
	return arr[0], nil
}

// Responses.

type usage struct {
	PromptTokens        int          `json:"prompt_tokens"`
	CompletionTokens    int          `json:"completion_tokens"`
	TotalTokens         int          `json:"total_tokens"`
	PromptTokensDetails promptDetail `json:"prompt_tokens_details"`
}

type promptDetail struct {
	CachedTokens int `json:"cached_tokens"`
}

// pdemuInfo is pdemu's extension of a response: how the cluster served it.
type pdemuInfo struct {
	Session   string  `json:"session"`
	Turn      int     `json:"turn"`
	Mode      string  `json:"mode"`
	Worker    string  `json:"worker"`
	Prefill   string  `json:"prefill,omitempty"`
	TTFT      float64 `json:"ttft_s"`
	E2E       float64 `json:"e2e_s"`
	AppendLen int     `json:"append_tokens"`
	// ServedLateMS: how late (wall ms) this stream's first token reached
	// the client compared with its emulated time (streams only).
	ServedLateMS float64 `json:"served_late_ms,omitempty"`
}

type chatChoice struct {
	Index        int      `json:"index"`
	Message      *chatOut `json:"message,omitempty"`
	Delta        *chatOut `json:"delta,omitempty"`
	Text         *string  `json:"text,omitempty"`
	FinishReason *string  `json:"finish_reason"`
	Logprobs     any      `json:"logprobs"`
}

type chatOut struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type response struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	SystemFingerprint string       `json:"system_fingerprint"`
	Choices           []chatChoice `json:"choices"`
	Usage             *usage       `json:"usage,omitempty"`
	Pdemu             *pdemuInfo   `json:"pdemu,omitempty"`
}

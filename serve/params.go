package serve

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// The request parameters, one table: what pdemu does with each one
// (docs/SERVE.md, "Conformance", lists them). Nothing is silently
// ignored: a parameter the table does not name, or one it refuses, gets
// 400 naming it; a no-op (a sampling parameter: the emulated text is
// synthetic, its timing does not depend on sampling) is accepted only
// within vLLM's range for it.

// paramUse is what pdemu does with a request parameter.
type paramUse uint8

const (
	paramUsed    paramUse = iota + 1 // read and applied
	paramNoOp                        // validated, no effect on the emulation (sampling)
	paramRefused                     // refused with 400: pdemu cannot honour it
)

// param is one row of the table.
type param struct {
	use paramUse
	// check validates the value (nil: any value of the right JSON type,
	// which decodeJSON checks); it returns the problem, "" if none.
	check func(raw json.RawMessage) string
	why   string // paramRefused: why
}

func number(lo, hi float64, loOpen bool) func(json.RawMessage) string {
	return func(raw json.RawMessage) string {
		if string(raw) == "null" {
			return ""
		}
		var v float64
		if err := json.Unmarshal(raw, &v); err != nil {
			return "must be a number"
		}
		if math.IsNaN(v) || v < lo || v > hi || loOpen && v == lo {
			open := "["
			if loOpen {
				open = "("
			}
			return fmt.Sprintf("must be in %s%g, %g], got %g", open, lo, hi, v)
		}
		return ""
	}
}

func integer(lo, hi int64) func(json.RawMessage) string {
	return func(raw json.RawMessage) string {
		if string(raw) == "null" {
			return ""
		}
		var v int64
		if err := json.Unmarshal(raw, &v); err != nil {
			return "must be an integer"
		}
		if v < lo || v > hi {
			return fmt.Sprintf("must be in [%d, %d], got %d", lo, hi, v)
		}
		return ""
	}
}

func boolean(raw json.RawMessage) string {
	var v *bool
	if json.Unmarshal(raw, &v) != nil {
		return "must be a boolean"
	}
	return ""
}

func refused(why string) param { return param{use: paramRefused, why: why} }

// sampling parameters: vLLM's ranges (vllm/sampling_params.py).
var samplingParams = map[string]param{
	"temperature":         {use: paramNoOp, check: number(0, 2, false)},
	"top_p":               {use: paramNoOp, check: number(0, 1, true)},
	"top_k":               {use: paramNoOp, check: integer(-1, math.MaxInt32)},
	"min_p":               {use: paramNoOp, check: number(0, 1, false)},
	"presence_penalty":    {use: paramNoOp, check: number(-2, 2, false)},
	"frequency_penalty":   {use: paramNoOp, check: number(-2, 2, false)},
	"repetition_penalty":  {use: paramNoOp, check: number(0, math.MaxFloat64, true)},
	"seed":                {use: paramNoOp, check: integer(math.MinInt64, math.MaxInt64)},
	"skip_special_tokens": {use: paramNoOp, check: boolean},
	// ignore_eos: the emulated request always runs to its length.
	"ignore_eos": {use: paramNoOp, check: boolean},
}

var commonParams = map[string]param{
	"model":              {use: paramUsed},
	"max_tokens":         {use: paramUsed, check: integer(1, math.MaxInt32)},
	"stream":             {use: paramUsed, check: boolean},
	"stream_options":     {use: paramUsed},
	"n":                  {use: paramUsed, check: integer(1, 16)},
	"stop":               {use: paramUsed},
	"user":               {use: paramUsed},
	"min_tokens":         {use: paramUsed, check: integer(0, math.MaxInt32)},
	"logit_bias":         refused("it changes the sampled tokens, which pdemu does not sample"),
	"best_of":            refused("best-of sampling would run several sequences and return one; pdemu does not emulate it"),
	"response_format":    refused("structured output (JSON schema, guided decoding) is not emulated"),
	"guided_json":        refused("guided decoding is not emulated"),
	"guided_regex":       refused("guided decoding is not emulated"),
	"guided_choice":      refused("guided decoding is not emulated"),
	"guided_grammar":     refused("guided decoding is not emulated"),
	"structured_outputs": refused("structured output is not emulated"),
	"prompt_logprobs":    refused("prompt logprobs are not emulated"),
	"lora_request":       refused("LoRA adapters are not emulated"),
	"priority":           refused("request priorities are not emulated (every worker schedules FCFS)"),
}

var chatParams = map[string]param{
	"messages":              {use: paramUsed},
	"max_completion_tokens": {use: paramUsed, check: integer(1, math.MaxInt32)},
	"logprobs":              {use: paramUsed, check: boolean},
	"top_logprobs":          {use: paramUsed, check: integer(0, 20)},
	"tools":                 refused("tool calling is not emulated: the emulated answer is synthetic text"),
	"tool_choice":           refused("tool calling is not emulated"),
	"parallel_tool_calls":   refused("tool calling is not emulated"),
	"functions":             refused("function calling is not emulated"),
	"function_call":         refused("function calling is not emulated"),
	"audio":                 refused("audio output is not emulated"),
	"modalities":            refused("only text output is emulated"),
	"prediction":            refused("predicted outputs are not emulated"),
	"web_search_options":    refused("web search is not emulated"),
	"store":                 refused("stored completions are not kept"),
	"metadata":              refused("stored completions are not kept"),
	"service_tier":          refused("service tiers are not emulated"),
	"reasoning_effort":      refused("reasoning is not emulated"),
	"chat_template":         refused("the chat template is pdemu's own (ChatML)"),
	"chat_template_kwargs":  refused("the chat template is pdemu's own (ChatML)"),
	"add_generation_prompt": refused("the chat template is pdemu's own (ChatML, with a generation prompt)"),
	"echo":                  refused("echo is not emulated"),
}

var completionParams = map[string]param{
	"prompt":   {use: paramUsed},
	"logprobs": {use: paramUsed, check: integer(0, 5)},
	"echo":     refused("echo is not emulated"),
	"suffix":   refused("suffix (insertion) is not emulated"),
}

// checkParams refuses unknown and refused parameters and out-of-range
// values; body is a JSON object (decodeJSON checked it). extra are
// parameters the embedding front end reads itself (Options.ExtraParams).
func checkParams(body []byte, chat bool, extra []string) *apiError {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil // decodeJSON reports it
	}
	keys := slices.Sorted(maps.Keys(fields))
	own := completionParams
	if chat {
		own = chatParams
	}
	for _, k := range keys {
		p, ok := own[k]
		if !ok {
			p, ok = commonParams[k]
		}
		if !ok {
			p, ok = samplingParams[k]
		}
		if !ok && slices.Contains(extra, k) {
			continue
		}
		if !ok {
			return badRequest(k, "unsupported_parameter", "unsupported parameter %q: pdemu does not know it, and refuses rather than ignore it (docs/SERVE.md, Conformance)", k)
		}
		if p.use == paramRefused {
			if string(fields[k]) == "null" || k == "response_format" && isTextFormat(fields[k]) ||
				k == "best_of" && string(fields[k]) == "1" || k == "echo" && string(fields[k]) == "false" ||
				(k == "tools" || k == "functions") && strings.TrimSpace(string(fields[k])) == "[]" ||
				k == "tool_choice" && string(fields[k]) == `"none"` || k == "store" && string(fields[k]) == "false" ||
				k == "parallel_tool_calls" {
				continue // the value asks for nothing pdemu cannot do
			}
			return badRequest(k, "unsupported_parameter", "unsupported parameter %q: %s", k, p.why)
		}
		if p.check != nil {
			if msg := p.check(fields[k]); msg != "" {
				return badRequest(k, "invalid_value", "%s %s", k, msg)
			}
		}
	}
	return nil
}

func isTextFormat(raw json.RawMessage) bool {
	var f struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(raw, &f) == nil && f.Type == "text"
}

// stopStrings reads stop: a string, an array of strings, or null.
func stopStrings(raw json.RawMessage) ([]string, *apiError) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, badRequest("stop", "invalid_type", "stop must be a string or an array of strings")
	}
	out := many[:0]
	for _, m := range many {
		if m != "" {
			out = append(out, m)
		}
	}
	return out, nil
}

// chatRoles are the message roles accepted ("tool" and "function" need
// tool calling, which is refused).
var chatRoles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true}

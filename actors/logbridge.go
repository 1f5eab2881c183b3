package actors

import (
	"context"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// hclogHandler is a small slog.Handler that forwards protoactor's slog
// records to an hclog.Logger, so the whole program logs through hclog.
type hclogHandler struct {
	l     hclog.Logger
	attrs []any
}

func (h *hclogHandler) Enabled(_ context.Context, lvl slog.Level) bool {
	switch {
	case lvl >= slog.LevelError:
		return h.l.IsError()
	case lvl >= slog.LevelWarn:
		return h.l.IsWarn()
	case lvl >= slog.LevelInfo:
		return h.l.IsInfo()
	default:
		return h.l.IsDebug()
	}
}

func (h *hclogHandler) Handle(_ context.Context, r slog.Record) error {
	args := append([]any(nil), h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		args = append(args, a.Key, a.Value.Any())
		return true
	})
	switch {
	case r.Level >= slog.LevelError:
		h.l.Error(r.Message, args...)
	case r.Level >= slog.LevelWarn:
		h.l.Warn(r.Message, args...)
	case r.Level >= slog.LevelInfo:
		h.l.Info(r.Message, args...)
	default:
		h.l.Debug(r.Message, args...)
	}
	return nil
}

func (h *hclogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	n := &hclogHandler{l: h.l, attrs: append([]any(nil), h.attrs...)}
	for _, a := range attrs {
		n.attrs = append(n.attrs, a.Key, a.Value.Any())
	}
	return n
}

func (h *hclogHandler) WithGroup(name string) slog.Handler {
	return &hclogHandler{l: h.l.Named(name), attrs: h.attrs}
}

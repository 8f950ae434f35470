package app

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"k8s.io/klog/v2"

	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/watcher"
)

// NewLogger returns the operational logger (stderr, never stdout) and routes
// client-go's klog output into it so that both streams stay separate.
func NewLogger(stderr io.Writer, lc config.LogConfig) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(lc.Level)) // validated by config.Validate
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(stderr, opts)
	if lc.Format == "json" {
		h = slog.NewJSONHandler(stderr, opts)
	}
	logger := slog.New(h)
	klogTarget.Store(&handlerBox{watcher.ReflectorLogs(logger.With("source", "client-go").Handler())})
	klogOnce.Do(func() { klog.SetSlogLogger(slog.New(klogForwarder{})) })
	return logger
}

// klog's logger is process-wide and not safe to replace while the watches
// log, so it is set once, to a handler forwarding to the current logger.
var (
	klogOnce   sync.Once
	klogTarget atomic.Pointer[handlerBox] // boxed: text and JSON handlers are different types
)

type handlerBox struct{ slog.Handler }

type klogForwarder struct{}

func (klogForwarder) target() slog.Handler { return klogTarget.Load().Handler }

func (f klogForwarder) Enabled(ctx context.Context, l slog.Level) bool {
	return f.target().Enabled(ctx, l)
}
func (f klogForwarder) Handle(ctx context.Context, r slog.Record) error {
	return f.target().Handle(ctx, r)
}
func (f klogForwarder) WithAttrs(attrs []slog.Attr) slog.Handler { return f.target().WithAttrs(attrs) }
func (f klogForwarder) WithGroup(name string) slog.Handler       { return f.target().WithGroup(name) }

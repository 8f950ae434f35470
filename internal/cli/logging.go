package cli

import (
	"io"
	"log/slog"

	"k8s.io/klog/v2"

	"github.com/kubediff/kubediff/pkg/config"
)

// newLogger returns the operational logger (stderr, never stdout) and routes
// client-go's klog output into it so that both streams stay separate.
func newLogger(stderr io.Writer, lc config.LogConfig) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(lc.Level)) // validated by config.Validate
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(stderr, opts)
	if lc.Format == "json" {
		h = slog.NewJSONHandler(stderr, opts)
	}
	logger := slog.New(h)
	klog.SetSlogLogger(logger.With("source", "client-go"))
	return logger
}

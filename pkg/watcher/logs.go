package watcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubediff/kubediff/pkg/discovery"
)

// ReflectorLogs passes client-go reflectors' logs on to h, except that
// their "Failed to watch" errors, logged at every retry, go to debug
// level: listWatch logs each distinct failure once (watchErrorLogger);
// so does "event bookmark expired", which a streamed list waiting out
// an outage logs every 10 s (the outage is one line of its own); and
// so does anything client-go says of a lost connection (a watch ended, a
// response body cut short), one line per request: the outage is one line
// of its own (health.go). For klog's output too, which carries
// the logs of client-go's own informers.
func ReflectorLogs(h slog.Handler) slog.Handler { return reflectorLogHandler{h} }

type reflectorLogHandler struct{ slog.Handler }

// retryMessages are what client-go's reflectors say at each retry.
var retryMessages = map[string]bool{"Failed to watch": true, "Warning: event bookmark expired": true}

func (h reflectorLogHandler) Handle(ctx context.Context, r slog.Record) error {
	if retryMessages[r.Message] || connectionErrorAttr(r) {
		r.Level = slog.LevelDebug
		if !h.Enabled(ctx, r.Level) {
			return nil
		}
	}
	return h.Handler.Handle(ctx, r)
}

// connectionErrorAttr reports whether the record's err is a lost
// connection, or a request cancelled because kubediff is stopping (client-go
// logs an ERROR "context canceled" at some clean stops), or a watch the
// server closed at once with nothing sent, as a server going down does
// (client-go's "very short watch", retried with backoff).
func connectionErrorAttr(r slog.Record) bool {
	lost := false
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && a.Key == "err" {
			lost = isConnectionError(err) || errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "very short watch")
		}
		return !lost
	})
	return lost
}

func (h reflectorLogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return reflectorLogHandler{h.Handler.WithAttrs(attrs)}
}

func (h reflectorLogHandler) WithGroup(name string) slog.Handler {
	return reflectorLogHandler{h.Handler.WithGroup(name)}
}

// watchErrorLogger logs each distinct list/watch error of a target once
// at warning level and repeats at debug level, so a type that is gone or
// forbidden does not flood the logs while the reflector backs off.
func (w *Watcher) watchErrorLogger(ctx context.Context, t discovery.Target, h *targetHealth) func(error) {
	var mu sync.Mutex
	seen := map[string]bool{}
	return func(err error) {
		if ctx.Err() != nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
			return // stopping, or a watch the server closed normally
		}
		if isConnectionError(err) {
			// Not this target's trouble: the outage is logged once for all.
			w.opts.Logger.Debug("list/watch failed: connection", "resource", t.Resource.String(), "namespace", t.Namespace, "err", err)
			return
		}
		if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			h.fail(err) // an expired resourceVersion is routine: a relist follows
		}
		key := errorKey(err)
		mu.Lock()
		first := !seen[key]
		seen[key] = true
		mu.Unlock()
		attrs := []any{"resource", t.Resource.String(), "namespace", t.Namespace, "err", err}
		switch {
		case apierrors.IsNotFound(err):
			w.opts.Logger.Debug("type no longer served; waiting for rediscovery to stop its watch", attrs...)
		case first:
			w.opts.Logger.Warn("list/watch failed; retrying with backoff", attrs...)
		default:
			w.opts.Logger.Debug("list/watch failed again", attrs...)
		}
	}
}

// errorKey is what makes two list/watch errors the same for logging: API
// errors by reason (their messages name resourceVersions or the verb).
// Transport errors never get here (isConnectionError).
func errorKey(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return fmt.Sprintf("%s %d", status.Status().Reason, status.Status().Code)
	}
	return err.Error()
}

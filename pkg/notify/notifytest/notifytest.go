// Package notifytest helps sink tests run records through a real queue.
package notifytest

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/record"
)

// Deliver runs records through a queue in memory in front of sink, with a
// fast backoff and logs to logs (nil discards them), until each is
// delivered or given up on, and returns the queue for its counters.
func Deliver(t testing.TB, sink notify.Notifier, records []record.Change, backoff notify.Backoff, logs io.Writer) notify.Queue {
	t.Helper()
	if logs == nil {
		logs = io.Discard
	}
	q := notify.NewQueue("test", sink, notify.QueueOptions{Size: len(records) + 1, Backoff: backoff, AuthBackoff: backoff, Log: slog.New(slog.NewTextHandler(logs, nil))})
	for _, c := range records {
		q.Enqueue(c)
	}
	q.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	q.Run(ctx)
	return q
}

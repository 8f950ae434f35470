package notify

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/kubediff/kubediff/pkg/diff"
)

// Queue decouples one sink from the informers: Enqueue never blocks, and a
// single goroutine delivers records in the order they were enqueued, so a
// slow sink delays only itself.
type Queue struct {
	name string
	sink Notifier
	log  *slog.Logger

	mu     sync.Mutex // guards closed against Enqueue racing Close
	closed bool
	ch     chan diff.Change

	dropped   atomic.Uint64
	failed    atomic.Uint64
	delivered atomic.Uint64
}

// NewQueue returns a queue holding at most size records for sink.
func NewQueue(name string, sink Notifier, size int, log *slog.Logger) *Queue {
	if log == nil {
		log = slog.Default()
	}
	return &Queue{name: name, sink: sink, log: log, ch: make(chan diff.Change, size)}
}

// Enqueue adds c without blocking. When the queue is full or closed, c is
// dropped, counted and logged, never silently lost.
func (q *Queue) Enqueue(c diff.Change) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		select {
		case q.ch <- c:
			return true
		default:
		}
	}
	n := q.dropped.Add(1)
	q.log.Warn("record dropped: sink queue full", "sink", q.name, "kind", c.Kind,
		"namespace", c.Namespace, "name", c.Name, "type", c.Type, "droppedTotal", n)
	return false
}

// Run delivers records until the queue is closed and empty. ctx bounds
// delivery: once it is done, what remains is counted as dropped.
func (q *Queue) Run(ctx context.Context) {
	for c := range q.ch {
		if ctx.Err() != nil {
			q.dropped.Add(1)
			continue
		}
		if err := q.sink.Notify(ctx, c); err != nil {
			q.failed.Add(1)
			q.log.Error("record not delivered", "sink", q.name, "kind", c.Kind,
				"namespace", c.Namespace, "name", c.Name, "type", c.Type, "err", err)
			continue
		}
		q.delivered.Add(1)
	}
	if n := q.dropped.Load(); n > 0 {
		q.log.Warn("records dropped", "sink", q.name, "count", n)
	}
}

// Close stops accepting records; Run returns once the rest are delivered.
func (q *Queue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		close(q.ch)
	}
}

// Stats are a queue's counters.
type Stats struct {
	Delivered, Failed, Dropped uint64
	Waiting                    int
}

// Stats returns the queue's counters.
func (q *Queue) Stats() Stats {
	return Stats{
		Delivered: q.delivered.Load(),
		Failed:    q.failed.Load(),
		Dropped:   q.dropped.Load(),
		Waiting:   len(q.ch),
	}
}

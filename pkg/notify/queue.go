package notify

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kubediff/kubediff/pkg/record"
)

// QueueOptions configure a Queue.
type QueueOptions struct {
	// Size is how many records may wait; when full, new ones are dropped,
	// or wait for room with Block.
	Size int
	// Block makes Enqueue wait for room instead of dropping: stdout is read
	// by a pipe, and a slow reader should slow kubediff down, as it slows
	// any Unix filter, rather than lose records. The watches then read
	// more slowly; the API server keeps their events meanwhile (a watch it
	// closes for being slow resumes where it stopped, or lists again and
	// reports what changed).
	Block bool
	// Backoff is the retry policy for transient failures.
	Backoff Backoff
	// Log receives drops, retries and failures.
	Log *slog.Logger
}

// Queue decouples one sink from the informers and from the other sinks:
// Enqueue does not block (unless Block), and one goroutine delivers records in the order
// they came, retrying transient failures before moving on, so each
// object's records arrive in order and a slow sink delays only itself.
type Queue struct {
	name string
	sink Notifier
	opts QueueOptions

	mu     sync.Mutex // guards closed against Enqueue racing Close
	closed bool
	ch     chan record.Change

	delivered, failed, dropped, retries atomic.Uint64
	// droppedBefore is dropped when the current episode of drops began;
	// dropping says one is under way. Guarded by mu.
	droppedBefore uint64
	dropping      bool
	// enqueued and processed number records in queue order, so a caller
	// can tell when a given record has been handled (see Mark).
	enqueued, processed atomic.Uint64
}

// NewQueue returns a queue in front of sink.
func NewQueue(name string, sink Notifier, opts QueueOptions) *Queue {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Size < 1 {
		opts.Size = 1
	}
	if opts.Backoff == (Backoff{}) {
		opts.Backoff = DefaultBackoff
	}
	return &Queue{name: name, sink: sink, opts: opts, ch: make(chan record.Change, opts.Size)}
}

// Name is the sink's name.
func (q *Queue) Name() string { return q.name }

// Mark is one record's place in one queue.
type Mark struct {
	Queue *Queue
	Seq   uint64
}

// Handled reports whether the queue is done with the record (delivered,
// or given up on and counted).
func (m Mark) Handled() bool { return m.Queue.processed.Load() >= m.Seq }

// enqueue is Enqueue returning the record's Mark.
func (q *Queue) enqueue(c record.Change) (Mark, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		if q.opts.Block {
			q.ch <- c // Run keeps receiving until the queue is closed and empty
			return Mark{Queue: q, Seq: q.enqueued.Add(1)}, true
		}
		select {
		case q.ch <- c:
			q.endDropEpisode()
			return Mark{Queue: q, Seq: q.enqueued.Add(1)}, true
		default:
		}
	}
	n := q.dropped.Add(1)
	if !q.dropping {
		q.dropping, q.droppedBefore = true, n-1
		q.opts.Log.Warn("sink queue full: dropping records until it has room", append(c.LogAttrs(), "sink", q.name, "queueSize", q.opts.Size)...)
	}
	return Mark{}, false
}

// endDropEpisode logs, once, that records are accepted again and how
// many the episode dropped. The caller holds mu.
func (q *Queue) endDropEpisode() {
	if q.dropping {
		q.dropping = false
		q.opts.Log.Warn("sink queue has room again", "sink", q.name, "dropped", q.dropped.Load()-q.droppedBefore, "droppedTotal", q.dropped.Load())
	}
}

// Enqueue adds c; it does not block unless the queue was made with Block.
// When the queue is full or closed, c is dropped and counted, and the
// first drop of an episode is logged: never silently lost, never a log
// line per record.
func (q *Queue) Enqueue(c record.Change) bool {
	_, ok := q.enqueue(c)
	return ok
}

// Run delivers records until the queue is closed and empty. ctx bounds
// delivery, retries included: once it is done, what remains is counted and
// logged as dropped.
func (q *Queue) Run(ctx context.Context) {
	batcher, _ := q.sink.(BatchNotifier)
	for c := range q.ch {
		batch := []record.Change{c}
		if batcher != nil {
			batch = q.fill(batch, batcher.MaxBatch())
		}
		if ctx.Err() != nil {
			q.dropped.Add(uint64(len(batch)))
			q.processed.Add(uint64(len(batch)))
			continue
		}
		err := q.opts.Backoff.retry(ctx, func(ctx context.Context) error {
			if batcher != nil {
				return batcher.NotifyBatch(ctx, batch)
			}
			return q.sink.Notify(ctx, batch[0])
		}, func(err error, wait time.Duration) {
			q.retries.Add(1)
			q.opts.Log.Warn("delivery failed, retrying", "sink", q.name, "records", len(batch), "retryIn", wait.Round(time.Millisecond).String(), "err", err)
		})
		q.processed.Add(uint64(len(batch)))
		if err != nil {
			q.failed.Add(uint64(len(batch)))
			q.opts.Log.Error("records not delivered", append(batch[0].LogAttrs(), "sink", q.name, "records", len(batch), "err", err)...)
			continue
		}
		q.delivered.Add(uint64(len(batch)))
	}
	if closer, ok := q.sink.(Closer); ok {
		if err := closer.Close(); err != nil {
			q.opts.Log.Error("sink failed to write what it held", "sink", q.name, "err", err)
		}
	}
	if n := q.dropped.Load(); n > 0 {
		q.opts.Log.Warn("records dropped", "sink", q.name, "count", n)
	}
}

// fill adds to batch the records already waiting, up to max.
func (q *Queue) fill(batch []record.Change, max int) []record.Change {
	for len(batch) < max {
		select {
		case c, ok := <-q.ch:
			if !ok {
				return batch
			}
			batch = append(batch, c)
		default:
			return batch
		}
	}
	return batch
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
	Delivered, Failed, Dropped, Retries uint64
	Waiting                             int
}

// Stats returns the queue's counters.
func (q *Queue) Stats() Stats {
	return Stats{
		Delivered: q.delivered.Load(),
		Failed:    q.failed.Load(),
		Dropped:   q.dropped.Load(),
		Retries:   q.retries.Load(),
		Waiting:   len(q.ch),
	}
}

package notify

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/kubediff/kubediff/pkg/record"
)

// Queue decouples one sink from the watches and from the other sinks:
// Enqueue does not block (unless Block), and one goroutine delivers
// records in the order they came, retrying transient failures before
// moving on, so each object's records arrive in order and a slow sink
// delays only itself. There are two kinds: in memory (NewQueue) and
// spooled on disk (NewSpooledQueue); both deliver through the same loop
// (retry.go).
type Queue interface {
	// Name is the sink's name.
	Name() string
	// Enqueue adds c; it does not block unless the queue was made with
	// Block. When the queue is full or closed, c is dropped and counted,
	// and the first drop of an episode is logged: never silently lost,
	// never a log line per record.
	Enqueue(c record.Change) bool
	// Run delivers records until the queue is closed and empty. ctx
	// bounds delivery, retries included: once it is done, a queue in
	// memory counts and logs what remains as dropped, a spooled queue
	// keeps it for the next start.
	Run(ctx context.Context)
	// Close stops accepting records; Run returns once the rest are
	// delivered.
	Close()
	// Stats returns the queue's counters.
	Stats() Stats

	// enqueue is Enqueue returning the record's Mark, for the Router.
	// Unexported, so that only this package's two kinds are Queues.
	enqueue(c record.Change) (Mark, bool)
}

// QueueOptions configure a Queue.
type QueueOptions struct {
	// Size is how many records a queue in memory holds; when full, new
	// ones are dropped, or wait for room with Block.
	Size int
	// Block makes Enqueue wait for room instead of dropping: stdout is read
	// by a pipe, and a slow reader should slow kubediff down, as it slows
	// any Unix filter, rather than lose records. The watches then read
	// more slowly; the API server keeps their events meanwhile (a watch it
	// closes for being slow resumes where it stopped, or lists again and
	// reports what changed).
	Block bool
	// MaxBytes bounds a spooled queue's records, encoded; when it is
	// reached, new ones are dropped, or wait for room with Block.
	MaxBytes int64
	// Backoff is the retry policy for transient failures.
	Backoff Backoff
	// AuthBackoff is the retry policy while the receiver refuses the
	// sink's credentials (an AuthFailure): slow, since an operator has
	// to act. Zero means DefaultAuthBackoff.
	AuthBackoff Backoff
	// Log receives drops, retries and failures.
	Log *slog.Logger
}

// Mark is one record's place in one queue.
type Mark struct {
	processed *atomic.Uint64 // the queue's count of records handled
	seq       uint64
}

// Handled reports whether the queue is done with the record (delivered,
// or given up on and counted).
func (m Mark) Handled() bool { return m.processed.Load() >= m.seq }

// Stats are a queue's counters.
type Stats struct {
	Delivered, Failed, Dropped, Retries uint64
	Waiting                             int
	// WaitingBytes is the waiting records' encoded size, with a spool.
	WaitingBytes int64
}

// delivery is what both kinds of queue share: the sink and its retry
// policies, the counters, and the episodes of drops and failures that
// are logged once each rather than per record.
type delivery struct {
	name string
	sink Notifier
	opts QueueOptions

	mu     sync.Mutex // guards closed against Enqueue racing Close
	closed bool

	delivered, failed, dropped, retries atomic.Uint64
	// droppedBefore is dropped when the current episode of drops began;
	// dropping says one is under way. Guarded by mu.
	droppedBefore uint64
	dropping      bool
	// failure is the episode of failed deliveries under way, if any.
	failure episode
	// enqueued and processed number records in queue order, so a caller
	// can tell when a given record has been handled (see Mark).
	enqueued, processed atomic.Uint64
}

func newDelivery(name string, sink Notifier, opts QueueOptions) *delivery {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Backoff == (Backoff{}) {
		opts.Backoff = DefaultBackoff
	}
	if opts.AuthBackoff == (Backoff{}) {
		opts.AuthBackoff = DefaultAuthBackoff
	}
	return &delivery{name: name, sink: sink, opts: opts}
}

// Name is the sink's name.
func (d *delivery) Name() string { return d.name }

// accepted counts a record taken into the queue, ending an episode of
// drops, and returns its Mark. The caller holds mu.
func (d *delivery) accepted() Mark {
	d.endDropEpisode()
	return Mark{processed: &d.processed, seq: d.enqueued.Add(1)}
}

// drop counts c as dropped, and logs the first drop of an episode. The
// caller holds mu.
func (d *delivery) drop(c record.Change, boundKey string, bound any) {
	n := d.dropped.Add(1)
	if !d.dropping {
		d.dropping, d.droppedBefore = true, n-1
		d.opts.Log.Warn("sink queue full: dropping records until it has room", append(c.LogAttrs(), "sink", d.name, boundKey, bound)...)
	}
}

// endDropEpisode logs, once, that records are accepted again and how
// many the episode dropped. The caller holds mu.
func (d *delivery) endDropEpisode() {
	if d.dropping {
		d.dropping = false
		d.opts.Log.Warn("sink queue has room again", "sink", d.name, "dropped", d.dropped.Load()-d.droppedBefore, "droppedTotal", d.dropped.Load())
	}
}

// finish ends Run: the sink writes what it still holds, and the drops
// are summed up in one line.
func (d *delivery) finish() {
	if closer, ok := d.sink.(Closer); ok {
		if err := closer.Close(); err != nil {
			d.opts.Log.Error("sink failed to write what it held", "sink", d.name, "err", err)
		}
	}
	if n := d.dropped.Load(); n > 0 {
		d.opts.Log.Warn("records dropped", "sink", d.name, "count", n)
	}
}

// counters are Stats without what is waiting, which each kind knows.
func (d *delivery) counters() Stats {
	return Stats{
		Delivered: d.delivered.Load(),
		Failed:    d.failed.Load(),
		Dropped:   d.dropped.Load(),
		Retries:   d.retries.Load(),
	}
}

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
	// Spool, when set, holds the waiting records instead of memory: on
	// disk, so that they survive a restart and a long sink outage. Size
	// is then unused and MaxBytes bounds the queue.
	Spool Spool
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

// Spool is a queue's records on disk (pkg/state's Queue). Records are
// numbered in order; it holds those from Head to Tail-1. One goroutine
// reads and removes, others append.
type Spool interface {
	// Append adds c at the tail.
	Append(c record.Change) error
	// Read returns up to limit records from number from on, in order, the
	// number to read from next, and how many it skipped as damaged.
	Read(from uint64, limit int) (recs []record.Change, next uint64, skipped int, err error)
	// Remove forgets the records up to number through.
	Remove(through uint64)
	// Head is the number of the oldest record held.
	Head() uint64
	// Tail is the number the next record appended gets.
	Tail() uint64
	// Size is how many records it holds, and their encoded bytes.
	Size() (records int, bytes int64)
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
	ch     chan record.Change // the waiting records, without a spool
	// With a spool: wake tells Run that records were appended (or the
	// queue closed); room tells a blocked Enqueue that some were removed.
	wake chan struct{}
	room *sync.Cond

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
	if opts.AuthBackoff == (Backoff{}) {
		opts.AuthBackoff = DefaultAuthBackoff
	}
	q := &Queue{name: name, sink: sink, opts: opts}
	if opts.Spool == nil {
		q.ch = make(chan record.Change, opts.Size)
		return q
	}
	q.wake = make(chan struct{}, 1)
	q.room = sync.NewCond(&q.mu)
	// What an earlier run left is delivered first: it takes the first
	// places in the count that Marks refer to.
	held, _ := opts.Spool.Size()
	q.enqueued.Store(uint64(held))
	return q
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
	if q.opts.Spool != nil {
		return q.spool(c)
	}
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
	q.drop(c, "queueSize", q.opts.Size)
	return Mark{}, false
}

// spool appends c to the spool, unless the queue is closed or full (or
// waits for room, with Block). The caller holds mu.
func (q *Queue) spool(c record.Change) (Mark, bool) {
	full := func() bool { _, b := q.opts.Spool.Size(); return b >= q.opts.MaxBytes }
	for q.opts.Block && !q.closed && full() {
		q.room.Wait()
	}
	if !q.closed && !full() {
		err := q.opts.Spool.Append(c)
		if err == nil {
			q.endDropEpisode()
			select {
			case q.wake <- struct{}{}:
			default:
			}
			return Mark{Queue: q, Seq: q.enqueued.Add(1)}, true
		}
		q.opts.Log.Error("cannot queue a record", append(c.LogAttrs(), "sink", q.name, "err", err)...)
	}
	q.drop(c, "queueMaxBytes", q.opts.MaxBytes)
	return Mark{}, false
}

// drop counts c as dropped, and logs the first drop of an episode. The
// caller holds mu.
func (q *Queue) drop(c record.Change, boundKey string, bound any) {
	n := q.dropped.Add(1)
	if !q.dropping {
		q.dropping, q.droppedBefore = true, n-1
		q.opts.Log.Warn("sink queue full: dropping records until it has room", append(c.LogAttrs(), "sink", q.name, boundKey, bound)...)
	}
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
	if q.opts.Spool != nil {
		q.runSpooled(ctx)
	} else {
		q.runInMemory(ctx)
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

func (q *Queue) runInMemory(ctx context.Context) {
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
		q.deliver(ctx, batcher, batch)
		q.processed.Add(uint64(len(batch)))
	}
}

// runSpooled delivers the spool's records, oldest first, removing each
// once delivered (or given up on). When ctx ends first, what is left
// stays in the spool for the next start.
func (q *Queue) runSpooled(ctx context.Context) {
	batcher, _ := q.sink.(BatchNotifier)
	limit := 1
	if batcher != nil {
		limit = batcher.MaxBatch()
	}
	readFailing := false
	for next := q.opts.Spool.Head(); q.awaitRecords(ctx, next); {
		batch, after, skipped, err := q.opts.Spool.Read(next, limit)
		if err != nil {
			if !readFailing {
				q.opts.Log.Error("cannot read the sink's queue in the state dir: retrying", "sink", q.name, "err", err)
			}
			readFailing = true
			if !sleep(ctx, time.Second) {
				break
			}
			continue
		}
		readFailing = false
		if skipped > 0 {
			q.failed.Add(uint64(skipped))
			q.opts.Log.Error("damaged records in the sink's queue in the state dir: skipped", "sink", q.name, "records", skipped)
		}
		if len(batch) > 0 && !q.deliver(ctx, batcher, batch) && ctx.Err() != nil {
			break // not delivered, not given up on: kept for the next start
		}
		q.opts.Spool.Remove(after - 1)
		q.processed.Add(uint64(len(batch) + skipped))
		next = after
		q.mu.Lock()
		q.room.Broadcast()
		q.mu.Unlock()
	}
	if n, _ := q.opts.Spool.Size(); n > 0 {
		q.opts.Log.Warn("undelivered records kept in the state dir: they are delivered first at the next start", "sink", q.name, "records", n)
	}
}

// awaitRecords waits until the spool holds record next, and reports
// whether it does: false once the queue is closed and delivered, or ctx
// is done.
func (q *Queue) awaitRecords(ctx context.Context, next uint64) bool {
	for {
		if ctx.Err() != nil {
			return false
		}
		if next < q.opts.Spool.Tail() {
			return true
		}
		q.mu.Lock()
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return false
		}
		select {
		case <-q.wake:
		case <-ctx.Done():
		}
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
	if q.closed {
		return
	}
	q.closed = true
	if q.opts.Spool == nil {
		close(q.ch)
		return
	}
	q.room.Broadcast()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Stats are a queue's counters.
type Stats struct {
	Delivered, Failed, Dropped, Retries uint64
	Waiting                             int
	// WaitingBytes is the waiting records' encoded size, with a spool.
	WaitingBytes int64
}

// Stats returns the queue's counters.
func (q *Queue) Stats() Stats {
	s := Stats{
		Delivered: q.delivered.Load(),
		Failed:    q.failed.Load(),
		Dropped:   q.dropped.Load(),
		Retries:   q.retries.Load(),
		Waiting:   len(q.ch),
	}
	if q.opts.Spool != nil {
		s.Waiting, s.WaitingBytes = q.opts.Spool.Size()
	}
	return s
}

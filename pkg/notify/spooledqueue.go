package notify

import (
	"context"
	"sync"
	"time"

	"github.com/kubediff/kubediff/pkg/record"
)

// Spool is a queue's records on disk (pkg/state's Spool). Records are
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

// spooledQueue holds its waiting records in a Spool, so that they
// survive a restart and a long sink outage; opts.MaxBytes bounds it.
type spooledQueue struct {
	*delivery
	spool Spool
	// wake tells Run that records were appended (or the queue closed);
	// room tells a blocked Enqueue that some were removed.
	wake chan struct{}
	room *sync.Cond
}

// NewSpooledQueue returns a queue in front of sink whose records wait in
// spool, up to opts.MaxBytes. What an earlier run left there is
// delivered first.
func NewSpooledQueue(name string, sink Notifier, spool Spool, opts QueueOptions) Queue {
	q := &spooledQueue{delivery: newDelivery(name, sink, opts), spool: spool, wake: make(chan struct{}, 1)}
	q.room = sync.NewCond(&q.mu)
	// What an earlier run left takes the first places in the count that
	// Marks refer to.
	held, _ := spool.Size()
	q.enqueued.Store(uint64(held))
	return q
}

// Enqueue implements Queue.
func (q *spooledQueue) Enqueue(c record.Change) bool {
	_, ok := q.enqueue(c)
	return ok
}

// enqueue appends c to the spool, unless the queue is closed or full (or
// waits for room, with Block).
func (q *spooledQueue) enqueue(c record.Change) (Mark, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	full := func() bool { _, b := q.spool.Size(); return b >= q.opts.MaxBytes }
	for q.opts.Block && !q.closed && full() {
		q.room.Wait()
	}
	if !q.closed && !full() {
		err := q.spool.Append(c)
		if err == nil {
			q.signal()
			return q.accepted(), true
		}
		q.opts.Log.Error("cannot queue a record", append(c.LogAttrs(), "sink", q.name, "err", err)...)
	}
	q.drop(c, "queueMaxBytes", q.opts.MaxBytes)
	return Mark{}, false
}

// signal wakes Run, unless a wake-up is already pending.
func (q *spooledQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Run implements Queue: the spool's records are delivered oldest first,
// each removed once delivered (or given up on). When ctx ends first,
// what is left stays in the spool for the next start.
func (q *spooledQueue) Run(ctx context.Context) {
	batcher, _ := q.sink.(BatchNotifier)
	limit := 1
	if batcher != nil {
		limit = batcher.MaxBatch()
	}
	readFailing := false
	for next := q.spool.Head(); q.awaitRecords(ctx, next); {
		batch, after, skipped, err := q.spool.Read(next, limit)
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
		if len(batch) > 0 && !q.deliver(ctx, batcher, batch) {
			break // not delivered, not given up on: kept for the next start
		}
		q.spool.Remove(after - 1)
		q.processed.Add(uint64(len(batch) + skipped))
		next = after
		q.mu.Lock()
		q.room.Broadcast()
		q.mu.Unlock()
	}
	if n, _ := q.spool.Size(); n > 0 {
		q.opts.Log.Warn("undelivered records kept in the state dir: they are delivered first at the next start", "sink", q.name, "records", n)
	}
	q.finish()
}

// awaitRecords waits until the spool holds record next, and reports
// whether it does: false once the queue is closed and delivered, or ctx
// is done.
func (q *spooledQueue) awaitRecords(ctx context.Context, next uint64) bool {
	for {
		if ctx.Err() != nil {
			return false
		}
		if next < q.spool.Tail() {
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

// Close implements Queue.
func (q *spooledQueue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		q.room.Broadcast()
		q.signal()
	}
}

// Stats implements Queue.
func (q *spooledQueue) Stats() Stats {
	s := q.counters()
	s.Waiting, s.WaitingBytes = q.spool.Size()
	return s
}

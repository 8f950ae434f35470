package notify

import (
	"context"

	"github.com/kubediff/kubediff/pkg/record"
)

// memoryQueue holds its waiting records in a channel: lost at a restart,
// and dropped at the drain deadline.
type memoryQueue struct {
	*delivery
	ch chan record.Change
}

// NewQueue returns a queue in memory in front of sink, holding up to
// opts.Size records.
func NewQueue(name string, sink Notifier, opts QueueOptions) Queue {
	opts.Size = max(opts.Size, 1)
	return &memoryQueue{delivery: newDelivery(name, sink, opts), ch: make(chan record.Change, opts.Size)}
}

// Enqueue implements Queue.
func (q *memoryQueue) Enqueue(c record.Change) bool {
	_, ok := q.enqueue(c)
	return ok
}

func (q *memoryQueue) enqueue(c record.Change) (Mark, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		if q.opts.Block {
			q.ch <- c // Run keeps receiving until the queue is closed and empty
			return q.accepted(), true
		}
		select {
		case q.ch <- c:
			return q.accepted(), true
		default:
		}
	}
	q.drop(c, "queueSize", q.opts.Size)
	return Mark{}, false
}

// Run implements Queue. Once ctx is done, each batch left is counted as
// dropped.
func (q *memoryQueue) Run(ctx context.Context) {
	batcher, _ := q.sink.(BatchNotifier)
	for c := range q.ch {
		batch := []record.Change{c}
		if batcher != nil {
			batch = q.fill(batch, batcher.MaxBatch())
		}
		if ctx.Err() != nil || !q.deliver(ctx, batcher, batch) {
			q.dropped.Add(uint64(len(batch)))
		}
		q.processed.Add(uint64(len(batch)))
	}
	q.finish()
}

// fill adds to batch the records already waiting, up to max.
func (q *memoryQueue) fill(batch []record.Change, max int) []record.Change {
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

// Close implements Queue.
func (q *memoryQueue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		close(q.ch)
	}
}

// Stats implements Queue.
func (q *memoryQueue) Stats() Stats {
	s := q.counters()
	s.Waiting = len(q.ch)
	return s
}

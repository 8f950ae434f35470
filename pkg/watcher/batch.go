package watcher

import (
	"bufio"
	"time"
)

// Reading a busy watch in batches. Each event read on its own wakes the
// process: the HTTP/2 connection's reader hands it to the watch's
// decoder, which hands it to the reflector, which diffs and writes it;
// thread switches, the Go runtime's system monitor and cold caches cost
// most of an update's CPU (docs/benchmarks.md). Events that come while a
// watch is busy are worth reading together: after a read that waited less
// than a short window, the decoder waits out the window before it reads
// again, and then reads everything that arrived meanwhile in one go. At
// 100 updates a second the default 40 ms window cut kubediff's CPU per
// update by about a third, for at most 40 ms more latency (make bench).
//
// What does not wait:
//   - a lone event: a read that waited longer than the window means a
//     quiet watch, whose next read waits for data at once (no timer);
//   - a backlog (a burst, a slow reader catching up): a read that filled
//     half the buffer or more is followed by the next at once;
//   - the initial events of a streamed list: batching starts with the
//     first event that is not ADDED (the list's closing bookmark, or an
//     update), so syncing is never slowed.
type readBatch struct {
	window time.Duration // 0: no batching
	on     bool          // past the initial events
	busy   bool          // the last read waited less than the window
}

// start turns batching on, once the watch is past its initial events.
func (b *readBatch) start() { b.on = true }

// waitingRead is called before a read that will wait for data (nothing is
// buffered); the function it returns, after the read, with the reader
// that holds what was read. On a busy watch, the read first waits out the
// window.
func (b *readBatch) waitingRead() (done func(lines *bufio.Reader)) {
	if b.window <= 0 || !b.on {
		return func(*bufio.Reader) {}
	}
	if b.busy {
		time.Sleep(b.window)
	}
	start := time.Now()
	return func(lines *bufio.Reader) {
		backlog := lines.Buffered() >= lines.Size()/2
		b.busy = !backlog && time.Since(start) < b.window
	}
}

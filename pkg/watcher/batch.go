package watcher

import (
	"bufio"
	"time"
)

// Reading a busy watch in batches. Each event read on its own wakes the
// process: the HTTP/2 connection's reader hands it to the watch's
// decoder, which hands it to the reflector, which diffs and writes it;
// thread switches, the Go runtime's system monitor and cold caches cost
// most of an update's CPU (docs/benchmarks.md). When a watch's events
// come fast enough that the window gathers batchMin or more, the decoder
// waits out the window after a read and then reads everything that
// arrived meanwhile in one go: at 300 updates a second the default 40 ms
// window cut the CPU per update by 17% (make bench).
//
// What does not wait:
//   - a paced watch: events coming slower than batchMin a window (under
//     200 a second against the default 40 ms) are read as each comes, at
//     a latency of a few milliseconds. A wait that gathers only a few
//     saves little or nothing (measured: a 10 ms window at 300/s, 0%; an
//     8 ms window at 100/s cost 1.67× the CPU of none);
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
	busy   bool          // the next read waiting for data waits out the window first
	// The watch's rate, measured over rateEvents events: fast when they
	// came within rateEvents/batchMin windows, so that a window gathers
	// batchMin events or more.
	events int
	since  time.Time
	fast   bool
}

const (
	rateEvents = 16
	batchMin   = 8
)

// start turns batching on, once the watch is past its initial events.
func (b *readBatch) start() {
	if !b.on {
		b.on, b.since = true, time.Now()
	}
}

// event counts an event read, for the watch's rate.
func (b *readBatch) event() {
	if b.window <= 0 || !b.on {
		return
	}
	b.events++
	if b.events < rateEvents {
		return
	}
	now := time.Now()
	b.fast = now.Sub(b.since) <= b.fastSpan()
	b.events, b.since = 0, now
}

// fastSpan is the longest rateEvents events may take for the watch to be
// fast.
func (b *readBatch) fastSpan() time.Duration { return rateEvents * b.window / batchMin }

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
	if b.fast && start.Sub(b.since) > b.fastSpan() {
		b.fast = false // the watch slowed down since it was measured
	}
	return func(lines *bufio.Reader) {
		backlog := lines.Buffered() >= lines.Size()/2
		b.busy = b.fast && !backlog && time.Since(start) < b.window
	}
}

package watcher

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// bufferedStream is a connection as the HTTP/2 transport hands a body
// over: what arrives is buffered until read, and a read takes all of it.
type bufferedStream struct {
	mu      sync.Mutex
	cond    *sync.Cond
	buf     bytes.Buffer
	closed  bool
	waiting bool // a read waits for data
}

func newBufferedStream() *bufferedStream {
	s := &bufferedStream{}
	s.cond = sync.NewCond(&s.mu)
	return s
}

func (s *bufferedStream) Write(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	s.cond.Broadcast()
}

func (s *bufferedStream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.cond.Broadcast()
	return nil
}

func (s *bufferedStream) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.buf.Len() == 0 && !s.closed {
		s.waiting = true
		s.cond.Wait()
	}
	s.waiting = false
	if s.buf.Len() == 0 {
		return 0, io.EOF
	}
	return s.buf.Read(p)
}

func (s *bufferedStream) isWaiting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting
}

// countingReader counts the reads that reached the stream: each is a
// wake-up of the watch's decoder.
type countingReader struct {
	r     io.ReadCloser
	reads atomic.Int64
}

func (c *countingReader) Close() error { return c.r.Close() }

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads.Add(1)
	return c.r.Read(p)
}

// decodeSteadyStream writes n update events gap apart into a watch
// stream and decodes them with the given window; it returns how many
// reads the decoder made.
func decodeSteadyStream(t *testing.T, window, gap time.Duration, n int) int64 {
	t.Helper()
	line, err := os.ReadFile("testdata/configmap-event.json")
	if err != nil {
		t.Fatal(err)
	}
	stream := newBufferedStream()
	counted := &countingReader{r: stream}
	w, _ := testWatcher()
	d := &eventDecoder{body: counted, toCache: w.cacheTransform(configMaps),
		logErr: func(err error) { t.Error(err) }, connectionLost: func() {}, batch: readBatch{window: window}}
	go func() {
		for range n {
			stream.Write(line)
			time.Sleep(gap)
		}
		stream.Close()
	}()
	for i := range n {
		if typ, _, err := d.Decode(); err != nil || typ != "MODIFIED" {
			t.Fatalf("event %d: %s, %v", i, typ, err)
		}
	}
	return counted.reads.Load()
}

// A busy watch is read in batches: far fewer reads (wake-ups) than
// events, and every event decoded. One whose events come slower than two
// a window is read event by event: its reads wait for nothing.
func TestBusyWatchIsReadInBatches(t *testing.T) {
	const n = 100
	unbatched := decodeSteadyStream(t, 0, 2*time.Millisecond, n)
	batched := decodeSteadyStream(t, 40*time.Millisecond, 2*time.Millisecond, n)
	t.Logf("%d events 2 ms apart: %d reads one by one, %d in batches of a 40 ms window", n, unbatched, batched)
	if batched*2 > unbatched {
		t.Errorf("batched reads = %d, want under half of %d", batched, unbatched)
	}
	paced := decodeSteadyStream(t, 20*time.Millisecond, 5*time.Millisecond, 60)
	unpaced := decodeSteadyStream(t, 0, 5*time.Millisecond, 60)
	t.Logf("60 events 5 ms apart, a 20 ms window (4 events, under %d): %d reads, %d one by one", batchMin, paced, unpaced)
	if paced*10 < unpaced*9 {
		t.Errorf("events slower than %d a window were batched: %d reads against %d one by one", batchMin, paced, unpaced)
	}
}

func TestReadBatchWaitsOnlyOnABusyWatch(t *testing.T) {
	lines := bufio.NewReaderSize(strings.NewReader(""), 64)
	b := readBatch{window: 20 * time.Millisecond}
	events := func(n int) {
		for range n {
			b.event()
		}
	}

	events(rateEvents)
	b.waitingRead()(lines)
	if b.busy {
		t.Error("before the initial events end, a read never counts as busy")
	}
	b.start()
	events(rateEvents) // at once: far more than two a window
	b.waitingRead()(lines)
	if !b.busy {
		t.Error("a fast watch's read that waited less than the window: want busy")
	}
	done := b.waitingRead()
	time.Sleep(30 * time.Millisecond) // a quiet watch: the read waits long
	done(lines)
	if b.busy {
		t.Error("a read that waited longer than the window: want the next read at once")
	}
	full := bufio.NewReaderSize(strings.NewReader(strings.Repeat("x", 64)), 16)
	done = b.waitingRead()
	_, _ = full.Peek(16) // the read filled the buffer: a backlog
	done(full)
	if b.busy {
		t.Error("a read that filled the buffer (a backlog): want the next read at once")
	}

	// A paced watch, two events a window: each read at once.
	for range rateEvents {
		time.Sleep(b.window / 2)
		b.event()
	}
	b.waitingRead()(lines)
	if b.fast || b.busy {
		t.Errorf("a watch of two events a window (under %d): want no wait", batchMin)
	}
}

// A watch waiting on a quiet stream holds a 512-byte wake buffer, not a
// 32 KB read buffer: 1,000 idle types held 31 MB of read buffers, over
// half of kubediff's live heap, before.
func TestQuietWatchesHoldNoReadBuffer(t *testing.T) {
	line, err := os.ReadFile("testdata/configmap-event.json")
	if err != nil {
		t.Fatal(err)
	}
	const watches = 300
	w, _ := testWatcher()
	before := liveHeap()
	streams := make([]*bufferedStream, watches)
	for i := range streams {
		streams[i] = newBufferedStream()
		streams[i].Write(line)
		d := &eventDecoder{body: streams[i], toCache: w.cacheTransform(configMaps),
			logErr: func(err error) { t.Error(err) }, connectionLost: func() {}}
		go func() {
			for {
				if _, _, err := d.Decode(); err != nil {
					return
				}
			}
		}()
	}
	defer func() {
		for _, s := range streams {
			s.Close()
		}
	}()
	deadline := time.Now().Add(time.Minute)
	for i := 0; i < watches; {
		if streams[i].isWaiting() {
			i++
		} else if time.Now().After(deadline) {
			t.Fatalf("watch %d never waited for its next event", i)
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
	perWatch := (liveHeap() - before) / watches
	t.Logf("%d watches waiting on quiet streams: %d bytes of heap each", watches, perWatch)
	if perWatch > 8<<10 {
		t.Errorf("each quiet watch holds %d bytes, want under 8 KB (a read buffer is 32 KB)", perWatch)
	}
}

// liveHeap is the heap in use after collecting garbage (twice: pooled
// buffers survive one collection).
func liveHeap() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

package watcher

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// bufferedStream is a connection as the HTTP/2 transport hands a body
// over: what arrives is buffered until read, and a read takes all of it.
type bufferedStream struct {
	mu     sync.Mutex
	cond   *sync.Cond
	buf    bytes.Buffer
	closed bool
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
		s.cond.Wait()
	}
	if s.buf.Len() == 0 {
		return 0, io.EOF
	}
	return s.buf.Read(p)
}

// countingReader counts the reads that reached the stream: each is a
// wake-up of the watch's decoder.
type countingReader struct {
	r     io.Reader
	reads atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads.Add(1)
	return c.r.Read(p)
}

// decodeSteadyStream writes n update events 5 ms apart into a watch
// stream and decodes them with the given window; it returns how many
// reads the decoder made.
func decodeSteadyStream(t *testing.T, window time.Duration, n int) int64 {
	t.Helper()
	line, err := os.ReadFile("testdata/configmap-event.json")
	if err != nil {
		t.Fatal(err)
	}
	stream := newBufferedStream()
	counted := &countingReader{r: stream}
	w, _ := testWatcher()
	d := &eventDecoder{body: stream, lines: bufio.NewReaderSize(counted, 32<<10), toCache: w.cacheTransform(configMaps),
		logErr: func(err error) { t.Error(err) }, connectionLost: func() {}, batch: readBatch{window: window}}
	go func() {
		for range n {
			stream.Write(line)
			time.Sleep(5 * time.Millisecond)
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
// events, and every event decoded.
func TestBusyWatchIsReadInBatches(t *testing.T) {
	const n = 60
	unbatched := decodeSteadyStream(t, 0, n)
	batched := decodeSteadyStream(t, 40*time.Millisecond, n)
	t.Logf("%d events: %d reads one by one, %d in batches", n, unbatched, batched)
	if batched*2 > unbatched {
		t.Errorf("batched reads = %d, want under half of %d", batched, unbatched)
	}
}

func TestReadBatchWaitsOnlyOnABusyWatch(t *testing.T) {
	lines := bufio.NewReaderSize(strings.NewReader(""), 64)
	b := readBatch{window: 20 * time.Millisecond}

	b.waitingRead(lines)()
	if b.busy {
		t.Error("before the initial events end, a read never counts as busy")
	}
	b.start()
	b.waitingRead(lines)() // returned at once: events come quicker than the window
	if !b.busy {
		t.Error("a read that waited less than the window: want busy")
	}
	done := b.waitingRead(lines)
	time.Sleep(30 * time.Millisecond) // a quiet watch: the read waits long
	done()
	if b.busy {
		t.Error("a read that waited longer than the window: want the next read at once")
	}
	full := bufio.NewReaderSize(strings.NewReader(strings.Repeat("x", 64)), 16)
	done = b.waitingRead(full)
	_, _ = full.Peek(16) // the read filled the buffer: a backlog
	done()
	if b.busy {
		t.Error("a read that filled the buffer (a backlog): want the next read at once")
	}
}

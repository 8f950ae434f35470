package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/state"
)

// outage is a sink that fails (transiently) until healed.
type outage struct {
	recorder
	mu     sync.Mutex
	healed bool
	tries  int
}

func (o *outage) Notify(ctx context.Context, c record.Change) error {
	o.mu.Lock()
	o.tries++
	healed := o.healed
	o.mu.Unlock()
	if !healed {
		return Transient(errors.New("500 Internal Server Error"))
	}
	return o.recorder.Notify(ctx, c)
}

func (o *outage) heal() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.healed = true
}

func (o *outage) tried() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.tries
}

func openSpool(t *testing.T, dir string) (*state.Store, *state.Spool) {
	t.Helper()
	st, err := state.Open(dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() }) // a second Close does nothing
	spool, err := st.Spool("hook")
	if err != nil {
		t.Fatal(err)
	}
	return st, spool
}

func names(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("cm-%d", i))
	}
	return out
}

// TestSpooledQueueOutlivesAnOutageAndARestart: a sink down for longer than
// a drain keeps its records in the state dir; the next start delivers
// them first, then new ones, and a new record's Mark waits for all.
func TestSpooledQueueOutlivesAnOutageAndARestart(t *testing.T) {
	dir := t.TempDir()
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	st, spool := openSpool(t, dir)
	down := &outage{}
	q := NewSpooledQueue("hook", down, spool, QueueOptions{MaxBytes: 1 << 20, Backoff: fast, Log: log})
	ctx, drainTimeout := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { q.Run(ctx); close(done) }()
	for i := range 20 {
		if !q.Enqueue(change(i)) {
			t.Fatalf("record %d refused", i)
		}
	}
	testEventually(t, func() bool { return down.tried() > 3 })
	q.Close()
	drainTimeout()
	<-done
	if s := q.Stats(); s.Dropped != 0 || s.Failed != 0 || s.Waiting != 20 {
		t.Fatalf("after a drain that timed out: %+v; want 20 waiting, none dropped or failed", s)
	}
	if n := strings.Count(logs.String(), "sink failing"); n != 1 || strings.Count(logs.String(), "level=WARN") != 2 ||
		!strings.Contains(logs.String(), "undelivered records kept in the state dir") {
		t.Fatalf("want one line for the failure and one for the records kept, not one per retry:\n%s", logs.String())
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st, spool = openSpool(t, dir)
	defer st.Close()
	up := &recorder{}
	q = NewSpooledQueue("hook", up, spool, QueueOptions{MaxBytes: 1 << 20, Backoff: fast, Log: quiet})
	mark, ok := q.enqueue(change(20))
	if !ok || mark.Handled() {
		t.Fatal("a new record was refused, or counts as handled before it was delivered")
	}
	q.Close()
	q.Run(context.Background())
	if got, want := up.got(), names(0, 21); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the restart delivered %v, want %v", got, want)
	}
	if !mark.Handled() {
		t.Fatal("the new record is delivered, yet its Mark says it is not")
	}
	if n, _ := spool.Size(); n != 0 {
		t.Fatalf("%d records still held after delivery", n)
	}
}

// TestSpooledQueueBoundedInBytes: at queueMaxBytes new records are
// dropped, counted and logged once; a blocking queue (stdout) waits.
func TestSpooledQueueBoundedInBytes(t *testing.T) {
	var logs strings.Builder
	_, spool := openSpool(t, t.TempDir())
	for range 2 { // only to learn a record's size: the second waits, and counts
		if err := spool.Append(change(0)); err != nil {
			t.Fatal(err)
		}
	}
	_, both := spool.Size()
	size := both / 2
	spool.Remove(spool.Tail() - 1)
	down := &outage{}
	q := NewSpooledQueue("hook", down, spool, QueueOptions{MaxBytes: 5 * size, Backoff: fast, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	for i := range 12 {
		q.Enqueue(change(i))
	}
	if s := q.Stats(); s.Waiting != 5 || s.Dropped != 7 {
		t.Fatalf("stats = %+v; want 5 held (the bound) and 7 dropped", s)
	}
	if n := strings.Count(logs.String(), "sink queue full"); n != 1 || !strings.Contains(logs.String(), "queueMaxBytes=") {
		t.Fatalf("want one line for the episode, naming queueMaxBytes:\n%s", logs.String())
	}
	down.heal()
	q.Close()
	q.Run(context.Background())
	if got, want := down.got(), names(0, 5); !reflect.DeepEqual(got, want) {
		t.Fatalf("delivered %v, want the oldest 5 %v", got, want)
	}

	_, spool = openSpool(t, t.TempDir())
	slow := &outage{}
	q = NewSpooledQueue("stdout", slow, spool, QueueOptions{MaxBytes: 5 * size, Block: true, Backoff: fast, Log: quiet})
	done := make(chan struct{})
	go func() { q.Run(context.Background()); close(done) }()
	enqueued := make(chan struct{})
	go func() {
		for i := range 12 {
			q.Enqueue(change(i))
		}
		close(enqueued)
	}()
	testEventually(t, func() bool { n, _ := spool.Size(); return n == 5 && slow.tried() > 2 })
	select {
	case <-enqueued:
		t.Fatal("a blocking queue took 12 records past a bound of 5")
	default:
	}
	slow.heal()
	<-enqueued
	q.Close()
	<-done
	if got, want := slow.got(), names(0, 12); !reflect.DeepEqual(got, want) || q.Stats().Dropped != 0 {
		t.Fatalf("delivered %v (dropped %d), want all 12 in order", got, q.Stats().Dropped)
	}
}

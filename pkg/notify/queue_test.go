package notify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/record"
)

type recorder struct {
	mu    sync.Mutex
	names []string
}

func (r *recorder) Notify(_ context.Context, c record.Change) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.names = append(r.names, c.Name)
	return nil
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.names...)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func change(i int) record.Change {
	return record.Change{Kind: "ConfigMap", Name: fmt.Sprintf("cm-%d", i)}
}

func TestQueueDeliversInOrderAndDrainsOnClose(t *testing.T) {
	rec := &recorder{}
	q := NewQueue("test", rec, QueueOptions{Size: 100, Log: quiet})
	for i := range 50 {
		if !q.Enqueue(change(i)) {
			t.Fatalf("record %d refused by a queue with room", i)
		}
	}
	done := make(chan struct{})
	go func() { q.Run(context.Background()); close(done) }()
	q.Close()
	<-done
	got := rec.got()
	if len(got) != 50 {
		t.Fatalf("delivered %d of 50", len(got))
	}
	for i, name := range got {
		if name != fmt.Sprintf("cm-%d", i) {
			t.Fatalf("record %d is %s: out of order", i, name)
		}
	}
	if s := q.Stats(); s.Delivered != 50 || s.Dropped != 0 {
		t.Fatalf("stats = %+v", s)
	}
}

func TestFullQueueDropsWithOneLinePerEpisodeWithoutBlocking(t *testing.T) {
	var logs strings.Builder
	q := NewQueue("slow", &recorder{}, QueueOptions{Size: 2, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	results := make(chan bool, 5)
	go func() {
		for i := range 5 {
			results <- q.Enqueue(change(i))
		}
	}()
	var accepted []bool
	for range 5 {
		select {
		case ok := <-results:
			accepted = append(accepted, ok)
		case <-time.After(30 * time.Second):
			t.Fatal("Enqueue blocked on a full queue")
		}
	}
	if !reflect.DeepEqual(accepted, []bool{true, true, false, false, false}) {
		t.Fatalf("accepted = %v, want the last three refused", accepted)
	}
	if q.Stats().Dropped != 3 {
		t.Fatalf("dropped = %d, want 3", q.Stats().Dropped)
	}
	if n := strings.Count(logs.String(), "dropping records"); n != 1 || !strings.Contains(logs.String(), "cm-2") {
		t.Fatalf("want one line for the episode naming its first record, got %d:\n%s", n, logs.String())
	}
	// Room again: the episode ends with one line counting it.
	go q.Run(context.Background())
	testEventually(t, func() bool { return q.Stats().Waiting == 0 })
	if !q.Enqueue(change(5)) {
		t.Fatal("queue with room refused a record")
	}
	if !strings.Contains(logs.String(), "has room again") || !strings.Contains(logs.String(), "dropped=3") {
		t.Fatalf("end of episode not logged with its count:\n%s", logs.String())
	}
	q.Close()
	if q.Enqueue(change(9)) {
		t.Fatal("closed queue accepted a record")
	}
}

func TestBlockingQueueWaitsForRoomAndLosesNothing(t *testing.T) {
	gate := make(chan struct{})
	sink := &recorder{}
	slow := NotifierFunc(func(ctx context.Context, c record.Change) error {
		<-gate // the reader is away
		return sink.Notify(ctx, c)
	})
	q := NewQueue("stdout", slow, QueueOptions{Size: 2, Block: true, Log: quiet})
	go q.Run(context.Background())
	const n = 50
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			if !q.Enqueue(change(i)) {
				t.Errorf("record %d refused", i)
			}
		}
	}()
	select {
	case <-done:
		t.Fatal("Enqueue did not wait for a reader that is away")
	case <-time.After(200 * time.Millisecond): // long enough to overrun a 2-record queue
	}
	close(gate)
	<-done
	q.Close()
	testEventually(t, func() bool { return len(sink.got()) == n })
	for i, name := range sink.got() {
		if name != fmt.Sprintf("cm-%d", i) {
			t.Fatalf("record %d is %s: out of order", i, name)
		}
	}
	if s := q.Stats(); s.Dropped != 0 {
		t.Fatalf("dropped %d", s.Dropped)
	}
}

func TestFailedDeliveryIsCountedAndLogged(t *testing.T) {
	var logs strings.Builder
	failing := NotifierFunc(func(context.Context, record.Change) error { return errors.New("receiver said no") })
	q := NewQueue("broken", failing, QueueOptions{Size: 10, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	q.Enqueue(change(1))
	q.Close()
	q.Run(context.Background())
	if q.Stats().Failed != 1 || !strings.Contains(logs.String(), "receiver said no") {
		t.Fatalf("stats = %+v, logs = %s", q.Stats(), logs.String())
	}
}

// fast keeps retry tests quick; the policy's shape is what they check.
var fast = Backoff{Initial: 10 * time.Millisecond, Max: 40 * time.Millisecond}

func TestTransientFailuresAreRetriedInOrderUntilDelivered(t *testing.T) {
	rec := &recorder{}
	var mu sync.Mutex
	calls := 0
	flaky := NotifierFunc(func(ctx context.Context, c record.Change) error {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n%3 != 0 { // two failures before each success
			return Transient(errors.New("503 Service Unavailable"))
		}
		return rec.Notify(ctx, c)
	})
	q := NewQueue("flaky", flaky, QueueOptions{Size: 10, Backoff: fast, Log: quiet})
	for i := range 5 {
		q.Enqueue(change(i))
	}
	q.Close()
	q.Run(context.Background())
	want := []string{"cm-0", "cm-1", "cm-2", "cm-3", "cm-4"}
	if got := rec.got(); !reflect.DeepEqual(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
	if s := q.Stats(); s.Retries != 10 || s.Delivered != 5 || s.Failed != 0 {
		t.Fatalf("stats = %+v, want 10 retries and 5 delivered", s)
	}
}

func TestRetryAfterIsWaitedExactly(t *testing.T) {
	var times []time.Time
	sink := NotifierFunc(func(context.Context, record.Change) error {
		times = append(times, time.Now())
		if len(times) == 1 {
			return RetryAfter(errors.New("429 Too Many Requests"), 300*time.Millisecond)
		}
		return nil
	})
	// A backoff far longer than Retry-After proves which one was used.
	q := NewQueue("limited", sink, QueueOptions{Size: 1, Backoff: Backoff{Initial: time.Hour, Max: time.Hour}, Log: quiet})
	q.Enqueue(change(0))
	q.Close()
	q.Run(context.Background())
	if len(times) != 2 {
		t.Fatalf("%d attempts, want 2", len(times))
	}
	if gap := times[1].Sub(times[0]); gap < 300*time.Millisecond {
		t.Fatalf("retried after %s, before Retry-After's 300ms", gap)
	}
}

func TestPermanentFailureIsNotRetried(t *testing.T) {
	calls := 0
	sink := NotifierFunc(func(context.Context, record.Change) error {
		calls++
		return errors.New("400 Bad Request: unknown field")
	})
	q := NewQueue("strict", sink, QueueOptions{Size: 1, Backoff: fast, Log: quiet})
	q.Enqueue(change(0))
	q.Close()
	q.Run(context.Background())
	if calls != 1 || q.Stats().Failed != 1 {
		t.Fatalf("calls = %d, stats = %+v; want one call, one failure", calls, q.Stats())
	}
}

func TestDeliveryGivesUpWhenTheDrainDeadlinePasses(t *testing.T) {
	down := NotifierFunc(func(context.Context, record.Change) error { return Transient(errors.New("connection refused")) })
	q := NewQueue("down", down, QueueOptions{Size: 5, Backoff: fast, Log: quiet})
	for i := range 3 {
		q.Enqueue(change(i))
	}
	q.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan struct{})
	go func() { q.Run(ctx); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run kept retrying past its deadline")
	}
	if s := q.Stats(); s.Failed+s.Dropped != 3 || s.Delivered != 0 {
		t.Fatalf("stats = %+v: all 3 must be counted as not delivered", s)
	}
}

type batchRecorder struct {
	recorder
	batches [][]string
}

func (b *batchRecorder) MaxBatch() int { return 3 }
func (b *batchRecorder) NotifyBatch(_ context.Context, cs []record.Change) error {
	var names []string
	for _, c := range cs {
		names = append(names, c.Name)
	}
	b.batches = append(b.batches, names)
	return nil
}

func TestWaitingRecordsAreBatchedForBatchSinks(t *testing.T) {
	b := &batchRecorder{}
	q := NewQueue("slack", b, QueueOptions{Size: 10, Log: quiet})
	for i := range 7 {
		q.Enqueue(change(i))
	}
	q.Close()
	q.Run(context.Background())
	want := [][]string{{"cm-0", "cm-1", "cm-2"}, {"cm-3", "cm-4", "cm-5"}, {"cm-6"}}
	if !reflect.DeepEqual(b.batches, want) {
		t.Fatalf("batches = %v, want %v", b.batches, want)
	}
}

// testEventually polls ok for up to 30 s.
func testEventually(t *testing.T, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("condition not met within 30 s")
		}
	}
}

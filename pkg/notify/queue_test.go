package notify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/diff"
)

type recorder struct {
	mu    sync.Mutex
	names []string
}

func (r *recorder) Notify(_ context.Context, c diff.Change) error {
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

func record(i int) diff.Change { return diff.Change{Kind: "ConfigMap", Name: fmt.Sprintf("cm-%d", i)} }

func TestQueueDeliversInOrderAndDrainsOnClose(t *testing.T) {
	rec := &recorder{}
	q := NewQueue("test", rec, 100, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for i := range 50 {
		if !q.Enqueue(record(i)) {
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

func TestFullQueueDropsLoudlyWithoutBlocking(t *testing.T) {
	var logs strings.Builder
	q := NewQueue("slow", &recorder{}, 2, slog.New(slog.NewTextHandler(&logs, nil)))
	results := make(chan bool, 3)
	go func() {
		for i := range 3 {
			results <- q.Enqueue(record(i))
		}
	}()
	var accepted []bool
	for range 3 {
		select {
		case ok := <-results:
			accepted = append(accepted, ok)
		case <-time.After(30 * time.Second):
			t.Fatal("Enqueue blocked on a full queue")
		}
	}
	if accepted[0] != true || accepted[1] != true || accepted[2] != false {
		t.Fatalf("accepted = %v, want the third refused", accepted)
	}
	if q.Stats().Dropped != 1 {
		t.Fatalf("dropped = %d, want 1", q.Stats().Dropped)
	}
	if !strings.Contains(logs.String(), "record dropped") || !strings.Contains(logs.String(), "cm-2") {
		t.Fatalf("drop not logged with the object's name: %s", logs.String())
	}
	q.Close()
	if q.Enqueue(record(9)) {
		t.Fatal("closed queue accepted a record")
	}
}

func TestFailedDeliveryIsCountedAndLogged(t *testing.T) {
	var logs strings.Builder
	failing := NotifierFunc(func(context.Context, diff.Change) error { return errors.New("receiver said no") })
	q := NewQueue("broken", failing, 10, slog.New(slog.NewTextHandler(&logs, nil)))
	q.Enqueue(record(1))
	q.Close()
	q.Run(context.Background())
	if q.Stats().Failed != 1 || !strings.Contains(logs.String(), "receiver said no") {
		t.Fatalf("stats = %+v, logs = %s", q.Stats(), logs.String())
	}
}

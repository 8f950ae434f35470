package notify

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/record"
)

// expired is a sink whose credential is refused until an operator fixes
// it; it notes when each refused attempt came.
type expired struct {
	recorder
	mu       sync.Mutex
	fixed    bool
	attempts []time.Time
}

func (e *expired) Notify(ctx context.Context, c record.Change) error {
	e.mu.Lock()
	fixed := e.fixed
	if !fixed {
		e.attempts = append(e.attempts, time.Now())
	}
	e.mu.Unlock()
	if !fixed {
		return AuthFailure(errors.New("webhook http://127.0.0.1/hook answered 401 Unauthorized: token expired"))
	}
	return e.recorder.Notify(ctx, c)
}

func (e *expired) fix() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.fixed = true
}

func (e *expired) tried() []time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]time.Time(nil), e.attempts...)
}

// slowAuth is a short stand-in for DefaultAuthBackoff, far longer than
// fast, so a test can tell which policy was used.
var slowAuth = Backoff{Initial: 150 * time.Millisecond, Max: 150 * time.Millisecond}

// TestRefusedCredentialsKeepRecordsAndRetrySlowly: a sink answering 401
// loses nothing (in memory, up to the queue's size), is retried on the
// slow policy rather than the transient one, and the episode is logged
// as one line when it starts and one when it heals.
func TestRefusedCredentialsKeepRecordsAndRetrySlowly(t *testing.T) {
	var logs strings.Builder
	sink := &expired{}
	q := NewQueue("hook", sink, QueueOptions{Size: 100, Backoff: fast, AuthBackoff: slowAuth, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	done := make(chan struct{})
	go func() { q.Run(context.Background()); close(done) }()
	for i := range 50 {
		if !q.Enqueue(change(i)) {
			t.Fatalf("record %d refused", i)
		}
	}
	testEventually(t, func() bool { return len(sink.tried()) >= 3 })
	sink.fix()
	q.Close()
	<-done
	if got, want := sink.got(), names(0, 50); !reflect.DeepEqual(got, want) {
		t.Fatalf("delivered %v after the credential was fixed, want every record in order %v", got, want)
	}
	tries := sink.tried()
	for i := 1; i < len(tries); i++ {
		if gap := tries[i].Sub(tries[i-1]); gap < slowAuth.Initial*8/10 {
			t.Fatalf("attempt %d came %s after the one before: retried on the transient policy, not the slow one", i+1, gap)
		}
	}
	if s := q.Stats(); s.Failed != 0 || s.Dropped != 0 || s.Delivered != 50 {
		t.Fatalf("stats = %+v; want 50 delivered, none failed or dropped", s)
	}
	assertOneEpisode(t, logs.String(), "401 Unauthorized")
}

// assertOneEpisode checks that logs hold one line for the failure, naming
// the sink and the status, one for the recovery, and nothing per record.
func assertOneEpisode(t *testing.T, logs, status string) {
	t.Helper()
	var failing []string
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "sink failing") {
			failing = append(failing, line)
		}
	}
	if len(failing) != 1 || !strings.Contains(failing[0], "sink=hook") || !strings.Contains(failing[0], status) || !strings.Contains(failing[0], "credentials") {
		t.Errorf("want one line when the episode starts, naming the sink, the credentials and %q; got %q", status, failing)
	}
	if n := strings.Count(logs, "sink delivering again"); n != 1 {
		t.Errorf("want one line when the episode heals, got %d", n)
	}
	if n := strings.Count(logs, "\n"); n != 2 {
		t.Errorf("want 2 log lines for the episode, got %d:\n%s", n, logs)
	}
}

// TestRefusedCredentialsOutliveARestartInTheStateDir: records a sink
// refused stay in the state dir past a shutdown, and are delivered once
// the credential works.
func TestRefusedCredentialsOutliveARestartInTheStateDir(t *testing.T) {
	dir := t.TempDir()
	st, spool := openSpool(t, dir)
	sink := &expired{}
	q := NewSpooledQueue("hook", sink, spool, QueueOptions{MaxBytes: 1 << 20, Backoff: fast, AuthBackoff: slowAuth, Log: quiet})
	ctx, drainTimeout := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { q.Run(ctx); close(done) }()
	for i := range 30 {
		q.Enqueue(change(i))
	}
	testEventually(t, func() bool { return len(sink.tried()) >= 2 })
	q.Close()
	drainTimeout()
	<-done
	if s := q.Stats(); s.Failed != 0 || s.Dropped != 0 || s.Waiting != 30 {
		t.Fatalf("after a shutdown while credentials were refused: %+v; want 30 kept", s)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	_, spool = openSpool(t, dir)
	sink.fix()
	q = NewSpooledQueue("hook", sink, spool, QueueOptions{MaxBytes: 1 << 20, Backoff: fast, AuthBackoff: slowAuth, Log: quiet})
	q.Close()
	q.Run(context.Background())
	if got, want := sink.got(), names(0, 30); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the restart delivered %v, want %v", got, want)
	}
}

// TestRejectedRecordsAreDroppedWithOneLinePerEpisode: a receiver that
// rejects records for good (400: the payload, not the sink, is at fault)
// gets no retries; the records are counted as failed, and logged as one
// line naming the first and its reason, and one line with the count when
// a record is delivered again.
func TestRejectedRecordsAreDroppedWithOneLinePerEpisode(t *testing.T) {
	var logs strings.Builder
	var mu sync.Mutex
	calls := 0
	sink := NotifierFunc(func(_ context.Context, c record.Change) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if c.Name != "cm-5" {
			return errors.New("400 Bad Request: unknown field")
		}
		return nil
	})
	q := NewQueue("strict", sink, QueueOptions{Size: 10, Backoff: fast, AuthBackoff: slowAuth, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	for i := range 6 {
		q.Enqueue(change(i))
	}
	q.Close()
	q.Run(context.Background())
	if s := q.Stats(); calls != 6 || s.Failed != 5 || s.Delivered != 1 || s.Retries != 0 {
		t.Fatalf("calls = %d, stats = %+v; want 6 calls, 5 failed, 1 delivered, no retries", calls, s)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "name=cm-0") || !strings.Contains(lines[0], "400 Bad Request: unknown field") ||
		!strings.Contains(lines[1], "sink delivering again") || !strings.Contains(lines[1], "rejected=5") {
		t.Fatalf("want one line naming the first rejected record and its reason, one counting the episode:\n%s", logs.String())
	}
}

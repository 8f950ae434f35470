package watcher

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/discovery"
)

// TestOutageIsTwoLinesAndRequestsWaitForTheServer: while probes fail,
// requests wait instead of failing (so no reflector backs off), they go
// on as soon as a probe succeeds, and the outage is one warning when it
// starts and one line when it ends, saying how long it was and how many
// changes came since.
func TestOutageIsTwoLinesAndRequestsWaitForTheServer(t *testing.T) {
	var down atomic.Bool
	var events atomic.Uint64
	logs := &records{}
	var states []bool
	var statesMu sync.Mutex
	h := &apiHealth{
		probe: func(context.Context) error {
			if down.Load() {
				return errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
			}
			return nil
		},
		log: slog.New(logs),
		onChange: func(c bool) {
			statesMu.Lock()
			defer statesMu.Unlock()
			states = append(states, c)
		},
		eventsLen: events.Load, wake: make(chan struct{}, 1), probed: make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.run(ctx)

	down.Store(true)
	h.suspect(ctx) // a request failed: the probe runs now, not in 5 s
	if h.connected() {
		t.Fatal("still connected after a failed probe")
	}
	resumed := make(chan struct{})
	go func() {
		if _, err := h.await(ctx, "configmaps"); err != nil {
			t.Error(err)
		}
		close(resumed)
	}()
	for range 3 { // more failures of more targets: no more lines
		h.suspect(ctx)
	}
	select {
	case <-resumed:
		t.Fatal("a request went on while the server did not answer")
	default:
	}
	down.Store(false)
	select {
	case <-resumed: // the next probe, a second later
	case <-time.After(30 * time.Second):
		t.Fatal("requests still waiting after the server answered")
	}
	events.Add(10)
	h.resume("configmaps") // its request went through
	testEventually(t, func() bool { return len(logs.messages()) >= 2 })
	lines := logs.messages()
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "lost the API server") || !strings.HasPrefix(lines[1], "API server back") {
		t.Fatalf("want one line when lost and one when back, got %q", lines)
	}
	back := logs.attrs("API server back")
	if back["changesSinceLost"] != "10" || back["outage"] == "" {
		t.Fatalf("back line attrs = %v, want the outage length and 10 changes", back)
	}
	statesMu.Lock()
	defer statesMu.Unlock()
	if len(states) != 2 || states[0] || !states[1] {
		t.Fatalf("connection states = %v, want [false true]", states)
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

// flakyServer is an apiHealth whose probe fails while down is set;
// events counts the changes the watches brought, and logs holds its
// lines.
type flakyServer struct {
	*apiHealth
	down   atomic.Bool
	events atomic.Uint64
	logs   *records
}

// runFlakyServer runs a flakyServer whose probe fails with the error
// failure, until the test ends, and returns the context it runs in.
func runFlakyServer(t *testing.T, failure string) (context.Context, *flakyServer) {
	s := &flakyServer{logs: &records{}}
	s.apiHealth = &apiHealth{
		probe: func(context.Context) error {
			if s.down.Load() {
				return errors.New(failure)
			}
			return nil
		},
		log: slog.New(s.logs), onChange: func(bool) {}, eventsLen: s.events.Load,
		wake: make(chan struct{}, 1), probed: make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go s.run(ctx)
	return ctx, s
}

// TestBackLineWaitsForTheWatchesToResume: on a loaded machine a watch can
// take seconds to start again after the server answers. The line saying
// the server is back comes once it has, and counts the changes it brought
// (it came a fixed 5 s after the server answered, and said 0).
func TestBackLineWaitsForTheWatchesToResume(t *testing.T) {
	ctx, s := runFlakyServer(t, "dial tcp 127.0.0.1:6443: connect: connection refused")
	lw := &listWatch{target: discovery.Target{Resource: configMaps, Namespace: "w1"}, health: s.apiHealth}
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api/v1/namespaces/w1/configmaps?watch=true",
		Err: errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")}

	s.down.Store(true)
	var calls atomic.Int32
	requested, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- lw.retry(ctx, func() error {
			if calls.Add(1) == 1 {
				return refused // the server is gone: the outage starts
			}
			close(requested) // it answers again, and is slow to start the watch
			<-release
			s.events.Add(10) // the changes made meanwhile
			return nil
		})
	}()
	testEventually(t, func() bool { return calls.Load() == 1 && !s.connected() })
	s.down.Store(false)
	select {
	case <-requested:
	case <-time.After(30 * time.Second):
		t.Fatal("the watch was not requested again after the server answered")
	}
	// The watch starts 7 s after the server answered (longer than the
	// line used to wait), or once the line says it did.
	back := func() bool { return len(s.logs.messages()) >= 2 }
	for end := time.Now().Add(7 * time.Second); time.Now().Before(end) && !back(); {
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	testEventually(t, back)
	if lines := s.logs.messages(); len(lines) != 2 || !strings.HasPrefix(lines[1], "API server back") {
		t.Fatalf("want one line when lost and one when back, got %q", lines)
	}
	if got := s.logs.attrs("API server back")["changesSinceLost"]; got != "10" {
		t.Fatalf("the line saying the server is back counts %s changes, want the 10 the resumed watch brought", got)
	}
}

// TestLostLineComesAfterTheMetric: whoever reads the line saying the
// server is lost (a person, an e2e test) finds the connection metric
// already at 0: it was set just after the line.
func TestLostLineComesAfterTheMetric(t *testing.T) {
	var connected atomic.Bool
	connected.Store(true)
	var atLine []bool
	h := &apiHealth{
		probe: func(context.Context) error { return errors.New("dial tcp 127.0.0.1:6443: connect: connection refused") },
		log: slog.New(handlerFunc(func(r slog.Record) {
			if strings.HasPrefix(r.Message, "lost the API server") {
				atLine = append(atLine, connected.Load())
			}
		})),
		onChange: connected.Store, eventsLen: func() uint64 { return 0 },
		wake: make(chan struct{}, 1), probed: make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.run(ctx)
	h.suspect(ctx)
	if len(atLine) != 1 || atLine[0] {
		t.Fatalf("when the lost line was logged the connection state was %v, want already false", atLine)
	}
}

// handlerFunc is a slog.Handler calling a function for each record.
type handlerFunc func(slog.Record)

func (f handlerFunc) Enabled(context.Context, slog.Level) bool { return true }
func (f handlerFunc) Handle(_ context.Context, r slog.Record) error {
	f(r)
	return nil
}
func (f handlerFunc) WithAttrs([]slog.Attr) slog.Handler { return f }
func (f handlerFunc) WithGroup(string) slog.Handler      { return f }

// TestBrokenWatchWaitsForTheClusterCheck: a cluster rebuilt behind the
// API server's address breaks every watch. The probe they ask for can
// take seconds to say anything (client-go retries a GET that met the
// dying connection a second later), and meanwhile the rebuilt server
// answers: a relist that went on then reported the rebuilt cluster's
// objects under the old cluster's id, and the check that notices the new
// cluster never ran, as no probe had failed. Requests after a broken
// watch wait until a probe answers and the cluster has been checked; when
// the server answered at once, that is no outage and logs nothing.
func TestBrokenWatchWaitsForTheClusterCheck(t *testing.T) {
	logs := &records{}
	probing, answer := make(chan struct{}, 1), make(chan struct{})
	var checks atomic.Int32
	h := &apiHealth{
		probe: func(ctx context.Context) error {
			select {
			case probing <- struct{}{}:
			default:
			}
			select {
			case <-answer: // the rebuilt server answers /readyz
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
		beforeResume: func(context.Context) error {
			checks.Add(1)
			return nil
		},
		log: slog.New(logs), onChange: func(bool) {}, eventsLen: func() uint64 { return 0 },
		wake: make(chan struct{}, 1), probed: make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.run(ctx)
	lw := &listWatch{target: discovery.Target{Resource: configMaps, Namespace: "w1"}, health: h}

	lw.connectionLost() // the server was killed: the watch broke
	select {
	case <-probing:
	case <-time.After(30 * time.Second):
		t.Fatal("a broken watch asked for no probe")
	}
	listed := make(chan int32, 1)
	done := make(chan error, 1)
	go func() {
		done <- lw.retry(ctx, func() error { // the reflector lists again
			listed <- checks.Load()
			return nil
		})
	}()
	select {
	case <-listed:
		t.Fatal("the relist went to the server before a probe answered and the cluster was checked")
	case <-time.After(500 * time.Millisecond):
	}
	close(answer)
	select {
	case n := <-listed:
		if n != 1 {
			t.Fatalf("the relist went on after %d cluster checks, want 1", n)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the relist still waits after the server answered")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !h.connected() {
		t.Fatal("not connected after the probe answered")
	}
	if lines := logs.messages(); len(lines) != 0 {
		t.Fatalf("a server that answered the first probe is no outage, got lines %q", lines)
	}
}

// TestCheckThatCannotReachTheServerKeepsRequestsWaiting: the probe can be
// answered by a server that stops answering the next moment (a server
// killed while its last answer was on the way, one still starting). When
// the cluster check before resuming cannot reach it, the watches do not
// resume unchecked: that is an outage, and they resume once a later
// probe answers and the check goes through.
func TestCheckThatCannotReachTheServerKeepsRequestsWaiting(t *testing.T) {
	logs := &records{}
	var checks atomic.Int32
	h := &apiHealth{
		probe: func(context.Context) error { return nil },
		beforeResume: func(context.Context) error {
			if checks.Add(1) == 1 {
				return &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api/v1/namespaces",
					Err: errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")}
			}
			return nil
		},
		log: slog.New(logs), onChange: func(bool) {}, eventsLen: func() uint64 { return 0 },
		wake: make(chan struct{}, 1), probed: make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lw := &listWatch{target: discovery.Target{Resource: configMaps, Namespace: "w1"}, health: h}
	lw.connectionLost()
	go h.run(ctx)
	listed := make(chan int32, 1)
	go func() {
		_ = lw.retry(ctx, func() error {
			listed <- checks.Load()
			return nil
		})
	}()
	select {
	case n := <-listed:
		if n != 2 {
			t.Fatalf("the relist went on after %d checks, want 2 (the first could not reach the server)", n)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the relist still waits after the check went through")
	}
	testEventually(t, func() bool { return len(logs.messages()) >= 2 })
	if lines := logs.messages(); !strings.HasPrefix(lines[0], "lost the API server") || !strings.HasPrefix(lines[1], "API server back") {
		t.Fatalf("want the outage's two lines, got %q", lines)
	}
}

// TestBackLineWaitsForAServerCatchingUp: a server resumed from SIGSTOP on
// a loaded machine sends the changes of the gap as its watch cache
// catches up with etcd: one, and the other 9 1.5 s later (seen at load
// 25). The line saying it is back counts all 10 (it counted 1 when a
// second of quiet was enough).
func TestBackLineWaitsForAServerCatchingUp(t *testing.T) {
	ctx, s := runFlakyServer(t, "Get \"https://127.0.0.1:6443/readyz\": context deadline exceeded")
	s.down.Store(true)
	s.suspect(ctx)
	if s.connected() {
		t.Fatal("still connected after a failed probe")
	}
	s.down.Store(false)
	testEventually(t, s.connected)
	s.events.Add(1)
	time.Sleep(1500 * time.Millisecond) // the scenario: the server is slow to send the rest
	s.events.Add(9)
	testEventually(t, func() bool { return len(s.logs.messages()) >= 2 })
	if got := s.logs.attrs("API server back")["changesSinceLost"]; got != "10" {
		t.Fatalf("the line saying the server is back counts %s changes, want the 10 of the gap", got)
	}
}

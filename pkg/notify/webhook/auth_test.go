package webhook

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/state"
)

// slowAuth stands in for notify.DefaultAuthBackoff (a minute between
// tries), far slower than fast.
var slowAuth = notify.Backoff{Initial: 100 * time.Millisecond, Max: 100 * time.Millisecond}

// TestExpiredCredentialLosesNothing: a receiver answering 401 (or 403)
// until its operator fixes the credential gets every record afterwards,
// in order, with or without a state dir; the episode is one log line
// when it starts, naming the sink and the status but not the URL's
// secret, and one when it heals.
func TestExpiredCredentialLosesNothing(t *testing.T) {
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		for _, spooled := range []bool{true, false} {
			t.Run(fmt.Sprintf("%d/stateDir=%v", status, spooled), func(t *testing.T) {
				expiredCredential(t, status, spooled)
			})
		}
	}
}

func expiredCredential(t *testing.T, status int, spooled bool) {
	const records = 100
	fixed := make(chan struct{})
	rc := &receiver{respond: func(_ int, w http.ResponseWriter, r *http.Request) bool {
		select {
		case <-fixed:
			return true
		default:
			http.Error(w, "token expired", status)
			return false
		}
	}}
	srv := serve(t, rc)
	sink, err := New(Options{URL: srv.URL + "/hook?token=query-canary-9a8b"})
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	opts := notify.QueueOptions{Size: records, MaxBytes: 1 << 20, Backoff: fast, AuthBackoff: slowAuth, Log: slog.New(slog.NewTextHandler(&logs, nil))}
	q := notify.NewQueue("hook", sink, opts)
	if spooled {
		st, err := state.Open(t.TempDir(), slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		spool, err := st.Spool("hook")
		if err != nil {
			t.Fatal(err)
		}
		q = notify.NewSpooledQueue("hook", sink, spool, opts)
	}
	done := make(chan struct{})
	go func() { q.Run(context.Background()); close(done) }()
	var sent []record.Change
	for i := range records {
		c := change(i%10, i/10+1)
		sent = append(sent, c)
		if !q.Enqueue(c) {
			t.Fatalf("record %d refused", i)
		}
	}
	eventually(t, func() bool { _, attempts := rc.snapshot(); return len(attempts) >= 3 })
	close(fixed) // the operator rotates the credential
	q.Close()
	<-done
	got, _ := rc.snapshot()
	if len(got) != records {
		t.Fatalf("the receiver got %d of %d records after the credential was fixed", len(got), records)
	}
	for i := range got {
		if got[i].ID != sent[i].ID {
			t.Fatalf("record %d is %s, want %s: out of order", i, got[i].ID, sent[i].ID)
		}
	}
	if s := q.Stats(); s.Failed != 0 || s.Dropped != 0 {
		t.Fatalf("stats = %+v; want nothing failed or dropped", s)
	}
	assertOneEpisode(t, logs.String(), fmt.Sprint(status))
}

// assertOneEpisode checks the logs hold one line when the episode starts,
// naming the sink and the status and not the URL's secret, one when it
// heals, and nothing else.
func assertOneEpisode(t *testing.T, logs, status string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "sink failing") || !strings.Contains(lines[1], "sink delivering again") {
		t.Fatalf("want one line when the sink starts failing and one when it heals, got %d:\n%s", len(lines), logs)
	}
	for _, want := range []string{"sink=hook", status, "credentials"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("the failing line does not name %q: %s", want, lines[0])
		}
	}
	if strings.Contains(logs, "query-canary") {
		t.Errorf("the URL's secret is in the logs:\n%s", logs)
	}
}

// eventually polls ok for up to 30 s.
func eventually(t *testing.T, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("condition not met within 30 s")
		}
	}
}

package pipeline

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/identity"
)

// A source gone silent while records flow is one warning, and its return
// one line; a quiet cluster (few records) and ambiguous records (the
// source spoke) are not silence.
func TestASilentSourceIsSaidOnce(t *testing.T) {
	var logs bytes.Buffer
	s := &sourceSilence{log: slog.New(slog.NewTextHandler(&logs, nil))}
	start := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	s.observe(identity.Known, start)
	for i := range 10 { // few records over two minutes: a quiet cluster
		s.observe(identity.Unknown, start.Add(time.Duration(i)*12*time.Second))
	}
	if logs.Len() != 0 {
		t.Fatalf("10 unnamed records logged: %s", logs.String())
	}
	for i := range 6000 {
		s.observe(identity.Unknown, start.Add(2*time.Minute+time.Duration(i)*10*time.Millisecond))
	}
	s.observe(identity.Ambiguous, start.Add(4*time.Minute))
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 || !strings.Contains(logs.String(), "no source has said who made a change") {
		t.Fatalf("6,010 unnamed records logged %d warnings, want 1:\n%s", n, logs.String())
	}
	s.observe(identity.Known, start.Add(5*time.Minute))
	s.observe(identity.Known, start.Add(5*time.Minute))
	if n := strings.Count(logs.String(), "name who made them again"); n != 1 {
		t.Fatalf("the source's return logged %d times, want 1:\n%s", n, logs.String())
	}
}

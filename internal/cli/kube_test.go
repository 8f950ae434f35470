package cli

import (
	"log/slog"
	"strings"
	"testing"
)

func TestAPIServerWarningsAreLoggedOnce(t *testing.T) {
	var logs strings.Builder
	w := &warningLogger{log: slog.New(slog.NewTextHandler(&logs, nil)), seen: map[string]bool{}}
	for range 3 {
		w.HandleWarningHeader(299, "", "v1 Endpoints is deprecated in v1.33+")
	}
	w.HandleWarningHeader(299, "", "another warning")
	if n := strings.Count(logs.String(), "Endpoints is deprecated"); n != 1 {
		t.Fatalf("warning logged %d times, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "another warning") {
		t.Fatalf("a different warning was swallowed:\n%s", logs.String())
	}
}

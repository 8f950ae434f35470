package metrics

import (
	"log/slog"
	"testing"
	"time"

	"github.com/kubediff/kubediff/internal/testsync"
)

// A keep-alive connection left idle is closed by the server: callers who
// open connections and leave them never pile them up.
func TestIdleConnectionsAreClosed(t *testing.T) {
	defer func(was time.Duration) { idleTimeout = was }(idleTimeout)
	idleTimeout = 500 * time.Millisecond
	addr, stop, err := Serve("127.0.0.1:0", New(), func() error { return nil }, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	testsync.IdleConnectionCloses(t, addr, "/healthz")
}

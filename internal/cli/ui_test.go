package cli

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/kubediff/kubediff/internal/testsync"
)

// A browser tab left open must not hold a connection to kubediff ui for
// ever: an idle keep-alive connection is closed.
func TestUIClosesIdleConnections(t *testing.T) {
	defer func(was time.Duration) { uiIdleTimeout = was }(uiIdleTimeout)
	uiIdleTimeout = 500 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout testsync.Buffer
	served := make(chan error, 1)
	page := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "page") })
	go func() { served <- serveUI(ctx, "127.0.0.1:0", page, false, &stdout, io.Discard) }()
	var addr string
	testsync.Eventually(t, "kubediff ui to print its URL", 60*time.Second, func() bool {
		m := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/`).FindStringSubmatch(stdout.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	})
	testsync.IdleConnectionCloses(t, addr, "/")
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("serveUI: %v", err)
	}
}

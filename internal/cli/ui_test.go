package cli

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
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
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	reader := bufio.NewReader(conn)
	resp, err := http.ReadResponse(reader, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	// Generous: the server should close it after half a second.
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err = reader.ReadByte()
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("an idle keep-alive connection to kubediff ui was still open after 30 s")
	}
	if !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("reading an idle connection: %v, want the server to close it", err)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("serveUI: %v", err)
	}
}

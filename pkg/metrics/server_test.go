package metrics

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
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
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: kubediff\r\n\r\n"); err != nil {
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
		t.Fatal("an idle keep-alive connection was still open after 30 s")
	}
	if !errors.Is(err, io.EOF) {
		t.Fatalf("reading an idle connection: %v, want the server to close it", err)
	}
}

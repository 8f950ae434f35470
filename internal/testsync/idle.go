package testsync

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// IdleConnectionCloses makes one keep-alive request of path to the HTTP
// server at addr and fails t unless the server closes the connection
// once it is idle: a client that leaves connections open (a browser tab,
// a script) must not pile them up. The server's idle timeout should be
// well under the 30 s this waits.
func IdleConnectionCloses(t testing.TB, addr, path string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	reader := bufio.NewReader(conn)
	resp, err := http.ReadResponse(reader, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err = reader.ReadByte()
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("an idle keep-alive connection to %s was still open after 30 s", addr)
	}
	if !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("reading an idle connection: %v, want the server to close it", err)
	}
}

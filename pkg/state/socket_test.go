package state

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A state dir whose socket path is too long for a socket's address (108
// bytes on Linux) is served and reached all the same; a short one too.
func TestSocketOfADeepStateDir(t *testing.T) {
	deep := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
	for name, dir := range map[string]string{"short": t.TempDir(), "deep": deep} {
		t.Run(name, func(t *testing.T) {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			ln, err := ListenSocket(dir)
			if err != nil {
				t.Fatalf("listen in a dir of %d bytes: %v", len(dir), err)
			}
			defer func() { _ = ln.Close() }()
			go func() {
				conn, err := ln.Accept()
				if err == nil {
					_, _ = conn.Write([]byte("hello"))
					_ = conn.Close()
				}
			}()
			conn, err := DialSocket(context.Background(), dir)
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer func() { _ = conn.Close() }()
			if got, _ := io.ReadAll(conn); string(got) != "hello" {
				t.Errorf("read %q through the socket", got)
			}
			if _, err := os.Stat(SocketPath(dir)); err != nil {
				t.Errorf("the socket is not at its path: %v", err)
			}
		})
	}
}

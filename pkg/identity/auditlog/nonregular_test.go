//go:build unix

package auditlog

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubediff/kubediff/internal/testsync"
	"github.com/kubediff/kubediff/pkg/identity/audit"
	"github.com/kubediff/kubediff/pkg/identity/identitytest"
)

// within fails the test when f has not returned after a generous
// deadline: what it tests is that nothing waits forever.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: still waiting after 30 s", what)
	}
}

// fifo makes a named pipe in a temporary directory; at the end of the
// test it is opened for writing once, so that an open waiting for a
// writer (the bug) returns and its goroutine ends.
func fifo(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	return path
}

// A FIFO or a device given as the audit log is refused at start with a
// sentence naming the flag, rather than waited on forever (a FIFO's
// open waits for a writer; /dev/zero never ends).
func TestFollowRefusesAPathThatIsNotARegularFile(t *testing.T) {
	for name, path := range map[string]string{"a FIFO": fifo(t), "/dev/zero": "/dev/zero", "a directory": t.TempDir()} {
		t.Run(name, func(t *testing.T) {
			var err error
			within(t, "Follow", func() {
				var stop func()
				stop, err = Follow(path, audit.Options{}, &identitytest.Recorder{}, slog.New(slog.DiscardHandler))
				if err == nil {
					stop()
				}
			})
			if err == nil || !strings.Contains(err.Error(), "--audit-log") || !strings.Contains(err.Error(), "not a regular file") {
				t.Fatalf("error %v, want one naming --audit-log and saying it is not a regular file", err)
			}
		})
	}
}

// A path that names a regular file at start (or nothing yet) and later
// a FIFO or /dev/zero is not read: one log line says so, however often
// it is looked at, one when it names a regular file again, and stop
// returns at once.
func TestAPathThatBecomesSpecialIsNotRead(t *testing.T) {
	for name, special := range map[string]func(t *testing.T, path string){
		"a FIFO": func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"/dev/zero": func(t *testing.T, path string) {
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.log")
			log := &testsync.Buffer{}
			r, notes := newReader(t, path, log)
			special(t, path)
			within(t, "reading", func() {
				for range 3 {
					r.step(context.Background())
				}
			})
			if n := strings.Count(log.String(), "not a regular file"); n != 1 {
				t.Fatalf("said %d times that the path is no regular file, want once:\n%s", n, log)
			}
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			appendTo(t, path, eventLine("a"))
			r.step(context.Background())
			if len(notes.All()) != 1 || !strings.Contains(log.String(), "regular file again") {
				t.Fatalf("noted %d writes once the path named a file again, want 1; log:\n%s", len(notes.All()), log)
			}
		})
	}
}

// Stopping never waits on a read: a follower whose file grows without
// end (here /dev/zero's endless data, read as if it were the file)
// stops at once.
func TestStopDoesNotWaitForAnEndlessRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	appendTo(t, path, "")
	r := &reader{path: path, notes: &identitytest.Recorder{}, log: slog.New(slog.DiscardHandler), window: audit.NewWindow(0)}
	zero, err := os.Open("/dev/zero")
	if err != nil {
		t.Skip(err)
	}
	r.file = zero
	t.Cleanup(r.close)
	ctx, cancel := context.WithCancel(context.Background())
	more := true
	within(t, "one pass over endless data", func() { more = r.step(ctx) })
	if !more {
		t.Fatal("a pass that stopped at its bound says there is no more to read")
	}
	cancel()
	within(t, "a pass after stop", func() { r.step(ctx) })
}

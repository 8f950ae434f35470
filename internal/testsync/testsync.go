// Package testsync holds what tests that wait need, without the local
// control plane (internal/testenv, which starts one, builds on it): a
// buffer a process writes while the test reads it, and polling with a
// deadline instead of fixed sleeps.
package testsync

import (
	"bytes"
	"sync"
	"testing"
	"time"
)

// Buffer is an io.Writer safe for a writing process and a polling test
// at once.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write implements io.Writer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Eventually polls ok until it holds, failing t after within: tests wait
// for what the cluster and kubediff do, never for a fixed time.
func Eventually(t testing.TB, what string, within time.Duration, ok func() bool) {
	t.Helper()
	end := time.Now().Add(within)
	for !ok() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

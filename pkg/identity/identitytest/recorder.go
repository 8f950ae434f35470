// Package identitytest is for tests only: it holds an identity.Noter
// that keeps every write it is given, so that a test can read what a
// source noted.
package identitytest

import (
	"sync"

	"github.com/kubediff/kubediff/pkg/identity"
)

// Recorder is an identity.Noter that keeps every write it is given, in
// order; its zero value is ready and it is safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	writes []identity.Write
}

// Note keeps w.
func (r *Recorder) Note(w identity.Write) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, w)
}

// All returns a copy of every write noted so far.
func (r *Recorder) All() []identity.Write {
	return r.Since(0)
}

// Count is the number of writes noted so far: a mark to pass to Since.
func (r *Recorder) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.writes)
}

// Since returns a copy of the writes noted after the first mark ones.
func (r *Recorder) Since(mark int) []identity.Write {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]identity.Write(nil), r.writes[mark:]...)
}

// In returns the writes noted in namespace ns, in order.
func (r *Recorder) In(ns string) []identity.Write {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []identity.Write
	for _, w := range r.writes {
		if w.Namespace == ns {
			out = append(out, w)
		}
	}
	return out
}

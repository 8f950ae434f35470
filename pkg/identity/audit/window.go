package audit

import (
	"sync"
	"time"

	"github.com/kubediff/kubediff/pkg/identity"
)

// DefaultWindow is how long a Window remembers what it admitted, and how
// far from now an event's time may be. The API server's webhook retries a
// failed batch for about two minutes; a record waits for its identity for
// seconds, so an older event could name nothing anyway.
const DefaultWindow = 5 * time.Minute

// maxRemembered bounds a Window's memory (about 100 bytes an entry) on a
// cluster writing faster than a million times in a window.
const maxRemembered = 1 << 20

// Window admits each event's writes once: a replayed event (its audit ID
// already admitted), one older or newer than the window, and a write
// whose object and resourceVersion were already noted (a write that
// changed nothing answers with the version it found) are not noted again.
// It is safe for concurrent use.
type Window struct {
	span time.Duration

	mu    sync.Mutex
	seen  map[string]bool
	order []remembered // oldest first
}

type remembered struct {
	key string
	at  time.Time
}

// NewWindow remembers for span (0: DefaultWindow).
func NewWindow(span time.Duration) *Window {
	if span <= 0 {
		span = DefaultWindow
	}
	return &Window{span: span, seen: map[string]bool{}}
}

// Admit returns the writes of one event that are to be noted, at now.
func (w *Window) Admit(writes []identity.Write, now time.Time) []identity.Write {
	if len(writes) == 0 {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.forget(now)
	if id := writes[0].ID; id != "" {
		if w.seen["id/"+id] {
			return nil
		}
		w.remember("id/"+id, now)
	}
	var out []identity.Write
	for _, wr := range writes {
		if wr.Time.Before(now.Add(-w.span)) || wr.Time.After(now.Add(w.span)) {
			continue
		}
		if wr.UID != "" && wr.ResourceVersion != "" {
			key := "rv/" + wr.UID + "/" + wr.ResourceVersion
			if w.seen[key] {
				continue
			}
			w.remember(key, now)
		}
		out = append(out, wr)
	}
	return out
}

func (w *Window) remember(key string, now time.Time) {
	w.seen[key] = true
	w.order = append(w.order, remembered{key, now})
}

// forget drops what was remembered before the window, or past the bound.
func (w *Window) forget(now time.Time) {
	drop := 0
	for drop < len(w.order) && (now.Sub(w.order[drop].at) > w.span || len(w.order)-drop > maxRemembered) {
		delete(w.seen, w.order[drop].key)
		drop++
	}
	// The array's dropped head is freed when append next grows it.
	w.order = w.order[drop:]
}

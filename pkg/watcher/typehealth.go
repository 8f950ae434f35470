package watcher

import (
	"errors"
	"sync/atomic"
	"time"
)

// stallAfter is how long a target's first list may bring nothing, while
// no other list completes either, before it counts as failing. A type the
// API server cannot list does not always fail at once: for a CRD whose
// conversion webhook is down, the server holds the request ~30 s while its
// own cache tries to list, then asks for retries. An answering type's list
// brings objects, page by page or event by event, well before this; and
// while other lists complete (hundreds of types queued behind the client's
// rate limit) the sync is progressing, and nothing counts as stalled.
const stallAfter = 5 * time.Second

var errStalled = errors.New("its list has brought nothing yet: the API server may be failing to list the type")

// targetHealth follows whether one target can be listed and watched. A
// type whose list fails for a reason of its own (its CRD's conversion
// webhook down, its aggregated API unavailable, a 5xx) must not hold back
// kubediff's readiness or its other types: the sync counts it as failing,
// names it, and its reflector keeps retrying with backoff. When it can be
// listed again that is said once, and its first list reports the objects
// created while it failed.
type targetHealth struct {
	started time.Time
	lastErr atomic.Pointer[string] // nil while it works
	failed  atomic.Bool            // it failed at least once
}

func newTargetHealth() *targetHealth { return &targetHealth{started: time.Now()} }

// fail records a list or watch failure of the target's own.
func (h *targetHealth) fail(err error) {
	msg := err.Error()
	h.lastErr.Store(&msg)
	h.failed.Store(true)
}

// heal records a list that worked, returning the failure it ends.
func (h *targetHealth) heal() (ended string, wasFailing bool) {
	if p := h.lastErr.Swap(nil); p != nil {
		return *p, true
	}
	return "", false
}

// failing returns the last failure, while the target fails.
func (h *targetHealth) failing() (string, bool) {
	if p := h.lastErr.Load(); p != nil {
		return *p, true
	}
	return "", false
}

// stalled marks the target failing when its first list has brought
// nothing for stallAfter since it started and since any list last
// completed (progress), and says whether it fails.
func (h *targetHealth) stalled(received int64, now, progress time.Time) bool {
	if _, failing := h.failing(); failing {
		return true
	}
	if received > 0 || now.Sub(h.started) < stallAfter || now.Sub(progress) < stallAfter {
		return false
	}
	h.fail(errStalled)
	return true
}

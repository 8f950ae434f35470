package auditwebhook

import (
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/kubediff/kubediff/pkg/identity"
)

// queue hands writes to the Noter on a goroutine of its own, so that a
// post is answered whatever the Noter does; when it falls queueSize
// behind, new writes are dropped and counted.
type queue struct {
	writes chan identity.Write
	done   chan struct{}
	log    *slog.Logger

	mu      sync.Mutex
	dropped int // since the last line saying so
}

func startQueue(notes identity.Noter, log *slog.Logger) *queue {
	q := &queue{writes: make(chan identity.Write, queueSize), done: make(chan struct{}), log: log}
	go func() {
		defer close(q.done)
		for w := range q.writes {
			notes.Note(w)
			q.healed()
		}
	}()
	return q
}

// put queues w, or drops it when the queue is full.
func (q *queue) put(w identity.Write) {
	select {
	case q.writes <- w:
		return
	default:
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.dropped == 0 {
		q.log.Warn("audit webhook: writes come faster than they can be noted; dropping them (their records will name no user)", "queued", queueSize)
	}
	q.dropped++
}

// healed says, once, that writes are noted again after some were dropped.
func (q *queue) healed() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.dropped > 0 && len(q.writes) < queueSize/2 {
		q.log.Info("audit webhook: noting writes again", "dropped", q.dropped)
		q.dropped = 0
	}
}

// stop notes what is queued and ends the goroutine.
func (q *queue) stop() {
	close(q.writes)
	<-q.done
}

// refusals logs refused posts: the first at once, then at most one line
// a minute with how many were refused, so that neither a misconfigured
// API server goes unnoticed nor a stranger fills the log.
type refusals struct {
	log *slog.Logger

	mu      sync.Mutex
	last    time.Time
	pending int
}

func (f *refusals) note(r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending++
	if time.Since(f.last) < time.Minute {
		return
	}
	f.log.Warn("audit webhook: refused posts without the client certificate or token kubediff expects (is the API server's --audit-webhook-config-file right?)",
		"refused", f.pending, "from", r.RemoteAddr)
	f.last, f.pending = time.Now(), 0
}

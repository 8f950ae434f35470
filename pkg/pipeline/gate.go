package pipeline

import (
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/record"
)

// Gate is the stage that lets several kubediff replicas run with one
// emitting: the leader (elected by pkg/leader, which only opens and closes
// the gate) passes records on to the sinks and tracks how far delivery has
// got; a follower holds recent records, so that if it takes over it
// replays what the old leader had not delivered and no change is lost.
type Gate struct {
	next    dispatcher
	maxHeld int
	track   bool // publish progress: only with leader election
	settle  time.Duration
	log     *slog.Logger

	mu      sync.Mutex
	leading bool
	held    []record.Change // followers: recent records, oldest first
	pending []dispatched    // leader: records not yet handled by every sink
	through uint64          // leader: every record up to this resourceVersion is handled
}

type dispatched struct {
	rv    uint64
	at    time.Time
	marks []notify.Mark
}

// dispatcher is the stage after the gate (route).
type dispatcher interface {
	Dispatch(c record.Change) []notify.Mark
}

// settle is how long a handled record must have been dispatched before
// the published progress moves past it: a record with a lower
// resourceVersion can reach the gate later, because each target has its
// own watch (up to ~2 s), and because the pipeline holds updates of owned
// objects and status-only updates for up to 12 s to join a controller's
// steps (and, with a source of identities, up to identity.wait more for
// who made it: New adds that). It must not be skipped by a takeover.
const settle = 15 * time.Second

// newGate returns a gate in front of next that starts as a follower
// holding at most maxHeld records. trackProgress keeps what Through needs;
// without leader election nothing reads it, so nothing is kept.
func newGate(next dispatcher, maxHeld int, trackProgress bool, log *slog.Logger) *Gate {
	if log == nil {
		log = slog.Default()
	}
	return &Gate{next: next, maxHeld: maxHeld, track: trackProgress, settle: settle, log: log}
}

// Emit sends c to the sinks when leading, else holds it for a takeover.
// It waits only when a sink's queue does (notify.QueueOptions.Block).
func (g *Gate) Emit(c record.Change) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.leading {
		g.send(c)
		return
	}
	if len(g.held) >= g.maxHeld {
		g.log.Warn("follower dropped its oldest held record: a takeover now may miss it", "kind", g.held[0].Kind, "name", g.held[0].Name)
		g.held = g.held[1:]
	}
	g.held = append(g.held, c)
}

func (g *Gate) send(c record.Change) {
	marks := g.next.Dispatch(c)
	if g.track {
		rv, _ := strconv.ParseUint(c.ResourceVersion, 10, 64)
		g.pending = append(g.pending, dispatched{rv: rv, at: time.Now(), marks: marks})
	}
}

// Lead makes this replica emit. Held records the previous leader had not
// delivered are replayed first: those with a resourceVersion above through
// (all of them when through is 0, unknown).
func (g *Gate) Lead(through uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	replayed := 0
	for _, c := range g.held {
		if through == 0 || after(c, through) {
			g.send(c)
			replayed++
		}
	}
	if g.track { // with an election; a lone replica just emits
		g.log.Info("leading: emitting records", "replayed", replayed, "heldSkipped", len(g.held)-replayed, "previousLeaderThrough", through)
	}
	g.held, g.leading = nil, true
}

// Follow stops emitting; records are held from now on.
func (g *Gate) Follow() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.leading, g.pending = false, nil
}

// Leading reports whether this replica emits.
func (g *Gate) Leading() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.leading
}

// Forget drops held records the leader has handled: a follower's hold
// stays small, and a takeover replays only what is needed.
func (g *Gate) Forget(through uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	i := 0
	for i < len(g.held) && !after(g.held[i], through) {
		i++
	}
	g.held = g.held[i:]
}

// Through returns a resourceVersion up to which every emitted record has
// been handled by every sink, for the leader to publish: it advances past
// a record once that record and all dispatched before it are handled and
// have settled, and stays below every record still pending.
func (g *Gate) Through() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	for len(g.pending) > 0 && handled(g.pending[0].marks) && time.Since(g.pending[0].at) >= g.settle {
		g.through = max(g.through, g.pending[0].rv)
		g.pending = g.pending[1:]
	}
	through := g.through
	for _, p := range g.pending {
		if p.rv > 0 && p.rv <= through {
			through = p.rv - 1
		}
	}
	return through
}

func handled(marks []notify.Mark) bool {
	for _, m := range marks {
		if !m.Handled() {
			return false
		}
	}
	return true
}

// after reports whether c is newer than through. A resourceVersion that
// is not a number (not etcd's) counts as newer: replaying too much beats
// losing a change.
func after(c record.Change, through uint64) bool {
	rv, err := strconv.ParseUint(c.ResourceVersion, 10, 64)
	return err != nil || rv > through
}

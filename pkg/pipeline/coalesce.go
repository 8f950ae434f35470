package pipeline

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kubediff/kubediff/pkg/diff"
	"github.com/kubediff/kubediff/pkg/drift"
	"github.com/kubediff/kubediff/pkg/identity"
	"github.com/kubediff/kubediff/pkg/journal"
	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/rollout"
	"github.com/kubediff/kubediff/pkg/watcher"
)

// Coalescing: a controller changes the objects it owns in quick steps (a
// rollout scales its ReplicaSets 10 → 8 → 5 → 3 → 0, a step per Pod
// ready), and the status of what it controls (a new Deployment's
// conditions appear, then Available turns True). Each step is a record a
// person does not need; the change from before the burst to after it is
// one. So updates of owned objects (those with a controller, record.Owner)
// and status-only updates are held briefly, further updates of the same
// object join them, and the object's state before the first is diffed
// once against its state after the last.
const (
	// coalesceQuiet is how long an object must see no such update before
	// its record goes on. A rollout's steps, and a new Deployment's
	// conditions, come a Pod's readiness apart: measured on the living
	// cluster, 15 replica steps made 10 records at 1 s, 4 at 2 s, and a
	// Deployment's Available turned True 5.6–7.2 s after its first
	// conditions (8.3 s on a loaded machine: heldUpdate.due).
	coalesceQuiet = 8 * time.Second
	// coalesceMax bounds how long any update is held, so a steadily
	// changing object is still reported. The leader gate settles records
	// for longer than this (leader's settle), so a takeover never skips a
	// record that was held here.
	coalesceMax = 12 * time.Second
	// coalesceTick is how often held updates are checked.
	coalesceTick = 200 * time.Millisecond
)

// coalescer holds and joins updates. It is safe for concurrent use: every
// reflector's goroutine passes records through it. Its lock guards only
// the maps: diffing a joined update and handing records on happen outside
// it, so a slow sink or a big rollout's release stalls no other watch.
type coalescer struct {
	differ *diff.Differ
	next   emitter
	holds  StateHolds // nil without a state dir
	now    func() time.Time

	mu   sync.Mutex
	held map[string]*heldUpdate // by object UID
	// releasing are updates taken out of held and being released outside
	// the lock: a record of the same object waits for that release, so
	// an object's records keep their order.
	releasing map[string]*heldUpdate
	// ended are the workloads whose rollout ended, by namespace, with
	// when: their objects' updates that come within coalesceMax are the
	// rollout's stragglers (another type's watch may deliver them after
	// the workload's), which go on at once to reach its fold.
	ended   map[string]map[workload]time.Time
	seq     uint64 // updates held so far
	stopped bool
}

// emitter is the stage after coalescing (keep): it takes each record
// with the event whose states it goes from and to.
type emitter interface {
	// hops are the writes c covers, oldest first (identity.Hop); nil
	// for a record of one write, ev's.
	emit(ev watcher.Event, c record.Change, hops []identity.Hop)
	keepState(ev watcher.Event, c record.Change)
}

type heldUpdate struct {
	ev          watcher.Event // Old: before the first update; New: after the last
	first       record.Change // the first update's record, emitted as it is unless joined
	joined      bool          // later updates joined the first
	at          record.Timestamp
	start, last time.Time
	seq         uint64 // arrival order, for updates held at the same instant
	// hops are the writes held: the first, and each joined after it
	// (quiet ones included), for who made them (identify.go).
	hops []identity.Hop
	// manager is the field manager of the last record joined ("": none
	// named), to keep a GitOps owner's writes apart from others'.
	manager string

	releaseMu sync.Mutex // held while it is released
	released  bool
}

// StateHolds keeps an object's stored state where it is while its update
// is held: the record and the newer state then reach the disk together,
// and a crash meanwhile loses neither. The pipeline declares it and
// imports no store; the state dir's store implements it.
type StateHolds interface {
	Hold(journal.Ref)
	// Release takes the records kept of what was held (its note's).
	Release(journal.Ref, ...journal.Entry)
}

// holdState holds ev's stored state while a stage holds ev past the
// handler's return, and gives ev a note of its own: the watcher hands
// the note ev came with to its Journal as soon as the handler
// returns, so what is kept of ev when it goes on goes to releaseState
// instead. Without holds, ev keeps its records in the history at once.
func holdState(holds StateHolds, ev *watcher.Event) {
	if ev.Note == nil {
		return
	}
	if holds == nil {
		ev.Note = nil
		return
	}
	holds.Hold(ev.Note.Ref)
	ev.Note = &journal.Note{Ref: ev.Note.Ref}
}

// releaseState lets go of what holdState held, with the records kept of
// ev since (its note's).
func releaseState(holds StateHolds, ev watcher.Event) {
	if holds != nil && ev.Note != nil {
		holds.Release(ev.Note.Ref, ev.Note.Records...)
	}
}

func newCoalescer(differ *diff.Differ, next emitter, holds StateHolds) *coalescer {
	return &coalescer{differ: differ, next: next, holds: holds, now: time.Now, held: map[string]*heldUpdate{}, releasing: map[string]*heldUpdate{},
		ended: map[string]map[workload]time.Time{}}
}

// add passes c (the record of ev) on, or holds the update to join it with
// what follows. Records of one object keep their order: anything but a
// held kind of update sends that object's held update first.
func (co *coalescer) add(ev watcher.Event, c record.Change) {
	co.mu.Lock()
	if co.stopped || !holdable(c) || co.straggler(c) {
		h := co.take(c.UID)
		co.mu.Unlock()
		if h != nil {
			co.releaseOnce(h)
		}
		co.next.emit(ev, c, nil)
		return
	}
	if h := co.held[c.UID]; h != nil && apart(h.manager, managerName(c)) {
		// A GitOps owner's self-heal joined with the edit it undoes
		// would read as nothing changed: each goes on as its own record.
		delete(co.held, c.UID)
		co.releasing[c.UID] = h
		co.mu.Unlock()
		co.releaseOnce(h)
		co.mu.Lock()
		if co.releasing[c.UID] == h {
			delete(co.releasing, c.UID)
		}
	}
	now := co.now()
	h := co.held[c.UID]
	if h == nil {
		co.seq++
		holdState(co.holds, &ev)
		co.held[c.UID] = &heldUpdate{ev: ev, first: c, at: c.Time, start: now, last: now, seq: co.seq, hops: []identity.Hop{hopOf(ev)}, manager: managerName(c)}
	} else {
		h.ev.New, h.joined, h.at, h.last, h.manager = ev.New, true, c.Time, now, managerName(c)
		h.hops = append(h.hops, hopOf(ev))
	}
	co.mu.Unlock()
	co.releaseEndedRollout(ev, c)
}

// releaseEndedRollout releases at once what is held of a workload whose
// rollout ev ends (its status says it rolled out or stalled): its own
// update and those of the objects under it. Their steps are over, so
// holding them for the quiet period would only print the rollout's
// summary that much later than the rollout ended.
func (co *coalescer) releaseEndedRollout(ev watcher.Event, c record.Change) {
	if c.Owner != nil || ev.Old == nil || ev.New == nil || !rollout.UnderWay(ev.Old) || rollout.Outcome(ev.New) == "" {
		return
	}
	co.mu.Lock()
	if co.ended[c.Namespace] == nil {
		co.ended[c.Namespace] = map[workload]time.Time{}
	}
	co.ended[c.Namespace][workload{c.Kind, c.Name}] = co.now()
	co.mu.Unlock()
	co.flush(func(h *heldUpdate) bool {
		return h.first.UID == c.UID || h.first.Namespace == c.Namespace && under(h.first.Owner, c.Kind, c.Name)
	})
}

// workload is a workload's kind and name.
type workload struct{ kind, name string }

// straggler says whether c is an update of an object under a workload
// whose rollout ended within coalesceMax: not held. Older ends are
// forgotten. The caller holds mu.
func (co *coalescer) straggler(c record.Change) bool {
	ended := co.ended[c.Namespace]
	if c.Owner == nil || len(ended) == 0 {
		return false
	}
	now, found := co.now(), false
	for w, at := range ended {
		switch {
		case now.Sub(at) >= coalesceMax:
			delete(ended, w)
		case under(c.Owner, w.kind, w.name):
			found = true
		}
	}
	if len(ended) == 0 {
		delete(co.ended, c.Namespace)
	}
	return found
}

// under says whether an object with owner o is the workload kind/name's:
// its own (a ReplicaSet, a StatefulSet's Pod), or, for a Deployment, one
// of its ReplicaSets' (named after it).
func under(o *record.Owner, kind, name string) bool {
	switch {
	case o == nil:
		return false
	case o.Kind == kind && o.Name == name:
		return true
	}
	return kind == "Deployment" && o.Kind == "ReplicaSet" && strings.HasPrefix(o.Name, name+"-")
}

// apart says whether writes by managers a and b must not be joined: one
// of them is a GitOps owner's (pkg/drift) and the other someone else's,
// whose change the owner's write may undo within the quiet period.
func apart(a, b string) bool {
	return a != b && (drift.OwnerManager(a) || drift.OwnerManager(b))
}

// managerName is the field manager c names, "" when none.
func managerName(c record.Change) string {
	if c.Manager == nil {
		return ""
	}
	return c.Manager.Name
}

// take returns the object's update that is held or being released (nil:
// none), taking a held one out of held. The caller holds mu and then
// releases it (releaseOnce) before anything else of the object goes on.
func (co *coalescer) take(uid string) *heldUpdate {
	if h := co.held[uid]; h != nil {
		delete(co.held, uid)
		return h
	}
	return co.releasing[uid]
}

// releaseOnce releases h unless another goroutine did or is doing it,
// and returns once it is released.
func (co *coalescer) releaseOnce(h *heldUpdate) {
	h.releaseMu.Lock()
	defer h.releaseMu.Unlock()
	if !h.released {
		h.released = true
		co.release(h)
	}
}

// quiet takes an update Diff found not worth a record (c is its header):
// an object whose update is held takes the newer state into the held
// one, which the store holds too (StateHolds); any other gets its state kept
// in the history without a record.
func (co *coalescer) quiet(ev watcher.Event, c record.Change) {
	co.mu.Lock()
	if h := co.held[c.UID]; h != nil && !co.stopped {
		h.ev.New = ev.New
		h.hops = append(h.hops, hopOf(ev))
		co.mu.Unlock()
		co.releaseEndedRollout(ev, c)
		return
	}
	releasing := co.releasing[c.UID]
	co.mu.Unlock()
	if releasing != nil {
		co.releaseOnce(releasing) // its record first, then this state
	}
	co.next.keepState(ev, c)
}

// holdable says whether c is a kind of update worth joining with the next:
// an owned object's, or a status-only one. Records carrying a patch or a
// unified diff are not joined (those forms are made once, for one step).
func holdable(c record.Change) bool {
	return c.UID != "" && c.Type == record.Updated && (c.Owner != nil || record.StatusOnly(c.Changes)) &&
		c.Patch == nil && c.Unified == ""
}

// release emits a held update's record: the first update's as it was
// diffed, or, when others joined it, the object's state before the first
// diffed once against its state after the last, if anything is left (a
// value that came back to where it was says nothing).
func (co *coalescer) release(h *heldUpdate) {
	c, ok, hops := h.first, true, h.hops[:1]
	if h.joined {
		c, ok = co.differ.Diff(h.ev.Event)
		hops = h.hops
	}
	if ok {
		c.Time = h.at // when the last of it was seen
		co.next.emit(h.ev, c, hops)
	}
	releaseState(co.holds, h.ev) // with the record, if any
}

// run releases held updates when they are due, and all of them when ctx
// is done; records added afterwards pass straight on.
func (co *coalescer) run(ctx context.Context) {
	tick := time.NewTicker(coalesceTick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			// Stop holding first, then release what is held: an update
			// held after a last flush would have nothing to release it.
			co.mu.Lock()
			co.stopped = true
			co.mu.Unlock()
			co.flush(func(*heldUpdate) bool { return true })
			return
		case <-tick.C:
			now := co.now()
			co.flush(func(h *heldUpdate) bool { return h.due(now) })
		}
	}
}

// due says whether h's record should go on at now: it has been held for
// coalesceMax, or its object has been quiet for coalesceQuiet. A
// workload's own status waits out its rollout up to coalesceMax instead:
// its conditions move at the pace of its Pods becoming ready, which a
// loaded machine stretches past coalesceQuiet (a new Deployment's
// Available turned True 8.3 s after its first conditions with two
// clusters on 2 cores), and "Available False, then True" is one change.
// An owned object (a ReplicaSet) keeps the quiet period: the fold it
// goes to waits for its burst's last record.
func (h *heldUpdate) due(now time.Time) bool {
	if now.Sub(h.start) >= coalesceMax {
		return true
	}
	if h.first.Owner == nil && h.ev.New != nil && rollout.UnderWay(h.ev.New) {
		return false
	}
	return now.Sub(h.last) >= coalesceQuiet
}

// flush releases the held updates due says are due, oldest first,
// outside the lock.
func (co *coalescer) flush(due func(*heldUpdate) bool) {
	co.mu.Lock()
	var out []*heldUpdate
	for uid, h := range co.held {
		if due(h) {
			out = append(out, h)
			delete(co.held, uid)
			co.releasing[uid] = h
		}
	}
	co.mu.Unlock()
	slices.SortFunc(out, func(a, b *heldUpdate) int {
		if c := a.start.Compare(b.start); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	for _, h := range out {
		co.releaseOnce(h)
	}
	co.mu.Lock()
	for _, h := range out {
		if co.releasing[h.first.UID] == h {
			delete(co.releasing, h.first.UID)
		}
	}
	co.mu.Unlock()
}

package pipeline

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubediff/kubediff/pkg/identity"
	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/release"
	"github.com/kubediff/kubediff/pkg/watcher"
)

// Identities say who made the writes a record covers (identity.Book),
// and signal when sources noted more.
type Identities interface {
	Who(identity.Query) (record.User, identity.Answer)
	Noted() <-chan struct{}
}

// Releases name the release behind each record (release.Book), and
// signal when they observed more.
type Releases interface {
	Release(obj *unstructured.Unstructured, resourceVersion string) (*record.Release, bool)
	Noted() <-chan struct{}
}

// identifyTick is how often records waiting for who made them are
// checked against their deadline (a noted write wakes them at once).
const identifyTick = 100 * time.Millisecond

// identify is the stage that names the user behind each record and the
// release its object belongs to, between coalesce and judge. A source
// may say who made a write after the watch delivered it (the audit
// webhook posts in batches about a second apart), and the watch of
// release Secrets or Applications may deliver the state a release tool
// wrote just before its write after the write itself, so a record whose
// writes are not noted yet, or whose release may not be, waits for
// them, up to wait and releaseWait; one that was not named by then goes on without a
// user, or with the release as last seen. An object's later records and
// quiet states wait behind it, so its history keeps its order; other
// objects' records pass.
type identify struct {
	who         Identities // nil: no source of identities
	releases    Releases   // nil: releases are not joined
	wait        time.Duration
	releaseWait time.Duration
	next        emitter
	holds       StateHolds // nil without a state dir
	now         func() time.Time
	// observe counts each record's result (named, unknown, ambiguous)
	// and how long it waited; nil: not counted.
	observe func(result string, waited time.Duration)
	// silence says when records stop being named; nil: not said.
	silence *sourceSilence

	mu      sync.Mutex
	waiting map[string]*identifyQueue // by object UID
	stopped bool
}

type identifyQueue struct {
	items     []waitingRecord
	releasing bool // items are being handed on outside the lock
}

type waitingRecord struct {
	ev     watcher.Event
	c      record.Change
	query  identity.Query
	answer identity.Answer
	since  time.Time
	// userPending and releasePending say what the record still waits
	// for, each until its deadline.
	userPending, releasePending bool
	deadline, releaseDeadline   time.Time
	stateOnly                   bool // a quiet state (keepState), waiting only for its turn
}

func newIdentify(who Identities, wait time.Duration, next emitter, holds StateHolds) *identify {
	return &identify{who: who, wait: wait, next: next, holds: holds, now: time.Now, waiting: map[string]*identifyQueue{}}
}

func (s *identify) emit(ev watcher.Event, c record.Change, hops []identity.Hop) {
	w := waitingRecord{ev: ev, c: c, query: queryOf(ev, c, hops), answer: identity.Known}
	s.nameUser(&w)
	s.nameRelease(&w)
	s.mu.Lock()
	queue := s.waiting[c.UID]
	// A change found after a gap was made while nothing watched: its
	// writes were noted then or never, waiting would not help.
	settled := !w.userPending && !w.releasePending || c.AfterGap || s.stopped || c.UID == ""
	if queue == nil && settled {
		s.mu.Unlock()
		s.count(w.answer, 0)
		s.next.emit(ev, w.c, hops)
		return
	}
	if queue == nil {
		queue = &identifyQueue{}
		s.waiting[c.UID] = queue
	}
	w.since = s.now()
	if settled {
		w.userPending, w.releasePending = false, false
	}
	w.deadline, w.releaseDeadline = w.since.Add(s.wait), w.since.Add(s.releaseWait)
	holdState(s.holds, &w.ev) // before anything can release it
	queue.items = append(queue.items, w)
	s.mu.Unlock()
}

// nameUser names w's user if its writes are noted, and says in
// w.userPending whether it is worth waiting for them.
func (s *identify) nameUser(w *waitingRecord) {
	if s.who == nil {
		return
	}
	user, answer := s.who.Who(w.query)
	w.answer = answer
	if answer == identity.Known {
		w.c.User = &user
	}
	w.userPending = answer == identity.Unknown && s.wait > 0
}

// nameRelease names the release w's object belongs to, and says in
// w.releasePending whether to wait for a state written before it: only
// for a write a release tool made (the state it wrote just before may
// still be on its way); other writes name the state seen.
func (s *identify) nameRelease(w *waitingRecord) {
	obj := w.ev.Object()
	if s.releases == nil || obj == nil {
		return
	}
	r, settled := s.releases.Release(obj, w.c.ResourceVersion)
	w.c.Release = r
	applied := w.c.Manager != nil && release.Applier(w.c.Manager.Name)
	w.releasePending = !settled && applied && s.releaseWait > 0
}

func (s *identify) keepState(ev watcher.Event, c record.Change) {
	s.mu.Lock()
	queue := s.waiting[c.UID]
	if queue == nil {
		s.mu.Unlock()
		s.next.keepState(ev, c)
		return
	}
	// The object's stored state stays in place while its record waits:
	// the record and the newer state reach the disk together.
	holdState(s.holds, &ev)
	queue.items = append(queue.items, waitingRecord{ev: ev, c: c, stateOnly: true})
	s.mu.Unlock()
}

// queryOf is what record c of ev knows of the writes it covers.
func queryOf(ev watcher.Event, c record.Change, hops []identity.Hop) identity.Query {
	if hops == nil {
		hop := identity.Hop{To: c.ResourceVersion}
		if ev.Old != nil {
			hop.From = ev.Old.GetResourceVersion()
		}
		hops = []identity.Hop{hop}
	}
	return identity.Query{Group: ev.Resource.GVR.Group, Resource: ev.Resource.GVR.Resource, Namespace: c.Namespace, Name: c.Name,
		UID: c.UID, Type: c.Type, Hops: hops, Time: time.Time(c.Time)}
}

// hopOf is the write ev reports.
func hopOf(ev watcher.Event) identity.Hop {
	var hop identity.Hop
	if ev.Old != nil {
		hop.From = ev.Old.GetResourceVersion()
	}
	if ev.New != nil {
		hop.To = ev.New.GetResourceVersion()
	}
	return hop
}

// run hands on waiting records as their writes are noted or their wait
// ends, and all of them when ctx is done; records that come afterwards
// pass straight on.
func (s *identify) run(ctx context.Context) {
	tick := time.NewTicker(identifyTick)
	defer tick.Stop()
	var noted, observed <-chan struct{} // nil: never
	if s.who != nil {
		noted = s.who.Noted()
	}
	if s.releases != nil {
		observed = s.releases.Noted()
	}
	for {
		select {
		case <-ctx.Done():
			s.mu.Lock()
			s.stopped = true
			s.mu.Unlock()
			s.releaseDue(true)
			return
		case <-noted:
		case <-observed:
		case <-tick.C:
		}
		s.releaseDue(false)
	}
}

// releaseDue hands on, object by object and in order, the waiting
// records that are named or due (all of them when all is set), outside
// the lock.
func (s *identify) releaseDue(all bool) {
	for {
		batch := s.takeDue(all)
		if len(batch) == 0 {
			return
		}
		for uid, items := range batch {
			for _, w := range items {
				if w.stateOnly {
					s.next.keepState(w.ev, w.c)
				} else {
					s.count(w.answer, s.now().Sub(w.since))
					s.next.emit(w.ev, w.c, w.query.Hops)
				}
				releaseState(s.holds, w.ev)
			}
			s.doneReleasing(uid)
		}
	}
}

// takeDue takes each object's leading records that are named or due.
func (s *identify) takeDue(all bool) map[string][]waitingRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	batch := map[string][]waitingRecord{}
	for uid, queue := range s.waiting {
		if queue.releasing {
			continue
		}
		n := 0
		for ; n < len(queue.items); n++ {
			w := &queue.items[n]
			if !w.stateOnly && !s.settle(w, now, all) {
				break
			}
		}
		if n > 0 {
			batch[uid] = queue.items[:n:n]
			queue.items = queue.items[n:]
			queue.releasing = true
		}
	}
	return batch
}

// settle names w's user and release if they are known now, and says
// whether it may go on: nothing left to wait for, or its waits ended.
// The caller holds mu.
func (s *identify) settle(w *waitingRecord, now time.Time, all bool) bool {
	if w.userPending {
		s.nameUser(w)
		w.userPending = w.userPending && !all && now.Before(w.deadline)
	}
	if w.releasePending {
		s.nameRelease(w)
		w.releasePending = w.releasePending && !all && now.Before(w.releaseDeadline)
	}
	return !w.userPending && !w.releasePending
}

// count observes a record's result and wait.
func (s *identify) count(answer identity.Answer, waited time.Duration) {
	if s.who == nil {
		return
	}
	s.silence.observe(answer, s.now())
	if s.observe == nil {
		return
	}
	result := map[identity.Answer]string{identity.Known: "named", identity.Unknown: "unknown", identity.Ambiguous: "ambiguous"}[answer]
	s.observe(result, waited)
}

func (s *identify) doneReleasing(uid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	queue := s.waiting[uid]
	queue.releasing = false
	if len(queue.items) == 0 {
		delete(s.waiting, uid)
	}
}

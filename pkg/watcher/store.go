package watcher

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kubediff/kubediff/pkg/journal"
)

// store is what a reflector keeps one target's objects in, and where
// changes become Events. client-go's informers put a queue and a fan-out
// to many handlers between the reflector and the cache, each a goroutine
// hop per event; kubediff has one handler, so the store calls it on the
// reflector's goroutine.
//
// Only that goroutine changes the store; the mutex is for Len.
type store struct {
	toCache func(obj any) (*compactObject, error)
	// emit hands a change to the handler; the note gathers what the
	// pipeline keeps of it, for the journal (nil without a journal).
	emit func(t EventType, old, new *compactObject, relisted bool, note *journal.Note)
	// persist keeps the objects on disk (nil without a state dir).
	persist *persisted

	mu      sync.Mutex
	objects map[string]*compactObject
	synced  atomic.Bool
	// restored says objects came from the state dir: the first list is
	// then compared with them, as a relist after a gap is.
	restored bool
	// reportSince, for a type that appeared while kubediff ran, makes the
	// first list report the objects created since then as added.
	reportSince time.Time
	// health says whether the target failed before its first list came
	// in; listed is told of every list that did.
	health *targetHealth
	listed func()
	// lastEvent is when the target last saw a change (Unix nanoseconds;
	// 0: none yet), for its health (States).
	lastEvent atomic.Int64
}

var _ cache.ReflectorStore = (*store)(nil)

func storeKey(c *compactObject) string {
	if c.Namespace == "" {
		return c.Name
	}
	return c.Namespace + "/" + c.Name
}

// Add implements cache.ReflectorStore: an object created.
func (s *store) Add(obj any) error { return s.put(obj) }

// Update implements cache.ReflectorStore: an object changed.
func (s *store) Update(obj any) error { return s.put(obj) }

func (s *store) put(obj any) error {
	c, err := s.toCache(obj)
	if err != nil {
		return err
	}
	key := storeKey(c)
	s.mu.Lock()
	old := s.objects[key]
	s.objects[key] = c
	s.mu.Unlock()
	s.lastEvent.Store(time.Now().UnixNano())
	note := s.persist.note(key)
	if s.synced.Load() {
		s.report(key, old, c, false, note)
	}
	// With the records the pipeline kept of it: the journal writes
	// both at once, so neither reaches the disk without the other.
	s.persist.put(key, c, note)
	c.decoded = nil // the diff has used it; the cache keeps the compact form
	return nil
}

// Delete implements cache.ReflectorStore. The event carries the object's
// final state, which is what is reported.
func (s *store) Delete(obj any) error {
	c, err := s.toCache(obj)
	if err != nil {
		return err
	}
	key := storeKey(c)
	s.mu.Lock()
	delete(s.objects, key)
	s.mu.Unlock()
	s.lastEvent.Store(time.Now().UnixNano())
	note := s.persist.note(key)
	if s.synced.Load() {
		s.emit(Deleted, c, nil, false, note)
	}
	s.persist.delete(key, note)
	return nil
}

// Replace implements cache.ReflectorStore: the full state, from the
// initial list or from listing again after a watch gap. The initial list
// is not news, unless the objects were restored from the state dir; after
// a gap, what changed meanwhile is reported, and objects gone are
// deletions whose final state is unknown.
func (s *store) Replace(list []any, _ string) error {
	objects := make(map[string]*compactObject, len(list))
	for _, obj := range list {
		c, err := s.toCache(obj)
		if err != nil {
			return err
		}
		c.decoded = nil
		objects[storeKey(c)] = c
	}
	s.mu.Lock()
	old := s.objects
	s.objects = objects
	s.mu.Unlock()
	if s.listed != nil {
		defer s.listed()
	}
	if !s.synced.Load() && !s.restored {
		// The first list of a type with nothing stored: all of it is
		// written, in key order (with the records of what it reports),
		// before the type's changes are reported. A type that failed
		// until now reports what was created meanwhile.
		if s.reportSince.IsZero() && s.health != nil && s.health.failed.Load() {
			s.reportSince = s.health.started
		}
		s.persist.replace(objects, s.reportNew(objects))
		s.synced.Store(true)
		return nil
	}
	s.synced.Store(true)
	// Each change is noted with its records, as in put, and only the
	// changes: the objects the store held are what the disk holds
	// (restored, or written since), so a relist or a restart rewrites
	// little.
	s.restored = false
	for key, c := range objects {
		note := s.persist.note(key)
		if s.report(key, old[key], c, true, note) {
			s.persist.put(key, c, note)
		}
	}
	for key, was := range old {
		if objects[key] == nil {
			note := s.persist.note(key)
			s.emit(Deleted, was, nil, true, note)
			s.persist.delete(key, note)
		}
	}
	return nil
}

// reportNew reports, for a type that appeared while kubediff ran, the
// objects of its first list created since it appeared, in key order, and
// returns the records the pipeline kept of them, which the list is
// written with.
func (s *store) reportNew(objects map[string]*compactObject) (records []journal.Entry) {
	if s.reportSince.IsZero() {
		return nil
	}
	since := s.reportSince.Truncate(time.Second) // creationTimestamp has seconds
	for _, key := range slices.Sorted(maps.Keys(objects)) {
		u, err := expand(objects[key])
		if err == nil && !u.GetCreationTimestamp().Time.Before(since) {
			note := s.persist.note(key)
			s.emit(Added, nil, objects[key], true, note)
			if note != nil {
				records = append(records, note.Records...)
			}
		}
	}
	return records
}

// report emits what became of the object at key, from was (nil: none) to
// c, and says whether anything did; note gathers what the pipeline keeps
// of it. A name whose UID changed is another object: the old one's
// deletion went unseen (a gap, a cluster restored from a backup), and it
// is reported as a deletion and an addition.
func (s *store) report(key string, was, c *compactObject, relisted bool, note *journal.Note) bool {
	switch {
	case was == nil:
		s.emit(Added, nil, c, relisted, note)
	case was.UID != c.UID && was.UID != "" && c.UID != "":
		s.emit(Deleted, was, nil, true, note)
		s.emit(Added, nil, c, relisted, note)
	case was.ResourceVersion != c.ResourceVersion:
		s.emit(Updated, was, c, relisted, note)
	default:
		return false
	}
	return true
}

// Resync implements cache.ReflectorStore; kubediff never resyncs.
func (s *store) Resync() error { return nil }

// Bookmark implements cache.ReflectorBookmarkStore; a bookmark changes
// nothing kubediff reports.
func (s *store) Bookmark(string) error { return nil }

// Len is the number of objects cached.
func (s *store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.objects)
}

// HasSynced says the initial list is in.
func (s *store) HasSynced() bool { return s.synced.Load() }

// cacheForm returns obj in the cache form: objects from the watch already
// are; objects from a list are converted by toCache.
func cacheForm(toCache func(*unstructured.Unstructured, bool) (*compactObject, error)) func(any) (*compactObject, error) {
	return func(obj any) (*compactObject, error) {
		switch o := obj.(type) {
		case *compactObject:
			return o, nil
		case *unstructured.Unstructured:
			return toCache(o, false)
		}
		return nil, fmt.Errorf("unexpected object %T from the API server", obj)
	}
}

// persisted is one target's objects in the journal.
type persisted struct {
	journal Journal
	target  string
	rules   string // the fingerprint of the rules objects go through
	logErr  func(error)
}

// note begins the note of a change of the object at key (nil without a
// state dir).
func (p *persisted) note(key string) *journal.Note {
	if p == nil {
		return nil
	}
	return &journal.Note{Ref: journal.Ref{Target: p.target, Key: key}}
}

// put notes the object's new state with what the pipeline kept of the
// change (note).
func (p *persisted) put(key string, c *compactObject, note *journal.Note) {
	if p == nil {
		return
	}
	if o := p.stored(c); o != nil {
		p.journal.Put(p.target, key, o, note.Records...)
		return
	}
	p.journal.Unstored(p.target, key, note.Records...)
}

// stored is c as the journal keeps it: plain JSON, so that the state
// dir does not depend on dictionaries that live only in memory. nil (and
// logged once) in the impossible case that c cannot be unpacked: the object
// is then compared with its older stored state after a restart.
func (p *persisted) stored(c *compactObject) *journal.Object {
	raw, err := c.json()
	if err != nil {
		p.logErr(err)
		return nil
	}
	return &journal.Object{UID: string(c.UID), ResourceVersion: c.ResourceVersion, Raw: raw}
}

// delete notes that the object is gone, with what the pipeline kept of
// its deletion (note).
func (p *persisted) delete(key string, note *journal.Note) {
	if p != nil {
		p.journal.Delete(p.target, key, note.Records...)
	}
}

// replace writes the target's objects whole, with the records they were
// reported with.
func (p *persisted) replace(objects map[string]*compactObject, records []journal.Entry) {
	if p == nil {
		return
	}
	// A snapshot: the map is the store's, which changes on.
	list := &storedList{p: p, keys: slices.Sorted(maps.Keys(objects))}
	list.objects = make([]*compactObject, len(list.keys))
	for i, key := range list.keys {
		list.objects[i] = objects[key]
	}
	if err := p.journal.WriteFull(p.target, p.rules, list, records...); err != nil {
		// The next flush tries again; until one succeeds, a crash loses
		// what changes meanwhile (its error is logged by the flush too).
		p.logErr(fmt.Errorf("cannot write the state dir: %w", err))
	}
}

// storedList is a target's objects as the journal writes a full list:
// each is unpacked as it is written, a few MiB at a time, not all at once.
// Cached objects never change (a new state is a new object), so the
// store's goroutine reads them safely.
type storedList struct {
	p       *persisted
	keys    []string
	objects []*compactObject
}

func (l *storedList) Len() int                     { return len(l.keys) }
func (l *storedList) Key(i int) string             { return l.keys[i] }
func (l *storedList) Object(i int) *journal.Object { return l.p.stored(l.objects[i]) }

// restore loads the target's objects as last stored: false when there are
// none (a type not watched before), and then the first list is not news.
// Objects stored under other rules go through the cache transform
// (toCache) again and are stored again so, so that what the rules now
// hide or redact never shows from the stored side of a diff.
func (p *persisted) restore(packer *typePacker, toCache func(*unstructured.Unstructured, bool) (*compactObject, error)) (map[string]*compactObject, bool, error) {
	if p == nil {
		return nil, false, nil
	}
	var again func(*unstructured.Unstructured, bool) (*compactObject, error)
	if p.journal.Rules(p.target) != p.rules {
		again = toCache
	}
	// Each object is packed as it is read: a type's stored objects are
	// never all in memory as plain JSON.
	objects := map[string]*compactObject{}
	var failed error
	ok, err := p.journal.Each(p.target, func(key string, o *journal.Object) {
		c, err := restored(key, o, packer, again)
		if err != nil {
			failed = cmp.Or(failed, err)
			return
		}
		objects[key] = c
	})
	if err = cmp.Or(err, failed); !ok || err != nil {
		return nil, false, err
	}
	if again != nil {
		p.replace(objects, nil) // stored as they now are, under the current rules
	}
	return objects, true, nil
}

// restored is one stored object in the cache form.
func restored(key string, o *journal.Object, packer *typePacker, again func(*unstructured.Unstructured, bool) (*compactObject, error)) (*compactObject, error) {
	if again != nil {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(o.Raw); err != nil {
			return nil, fmt.Errorf("stored object %s: %w", key, err)
		}
		return again(u, false)
	}
	ns, name, namespaced := strings.Cut(key, "/")
	if !namespaced {
		ns, name = "", key
	}
	c := &compactObject{Namespace: ns, Name: name, UID: types.UID(o.UID), ResourceVersion: o.ResourceVersion}
	if c.raw, c.dict = packer.pack(o.Raw); c.dict == nil {
		c.raw = bytes.Clone(c.raw) // o.Raw is the store's, for this call only
	}
	return c, nil
}

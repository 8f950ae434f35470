package pipeline

import (
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/journal"
	"github.com/kubediff/kubediff/pkg/kubeevents"
	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/watcher"
)

// Events beside changes (docs/why.md): an Event object is not reported
// as a change of itself but read as a fact about the object it regards,
// a record of type event naming that object and its owner. The history
// keeps every one (folded per object and reason); the stream gets those
// EventOptions.Show selects, each object's reason once while it repeats.

// eventRepeat is how long an object's Event of one reason stays shown:
// its repeats within it (a controller retrying a create every few
// seconds, then minutes) are counted in the history, not printed again.
const eventRepeat = 10 * time.Minute

// maxShown bounds the objects and reasons remembered as shown.
const maxShown = 10000

// maxOwners bounds how far up an object's owners are followed.
const maxOwners = 5

// EventOptions turn Events into facts about the objects they regard.
type EventOptions struct {
	// Show selects the Events the stream carries (nil: none).
	Show func(record.Event) bool
	// AsChanges also reports Event objects as changes of their own: the
	// user named them in resources.
	AsChanges bool
	// Objects finds the objects Events regard, and their owners.
	Objects ObjectLookup
}

// ObjectLookup finds the objects Events regard: their types among those
// discovered, and their states as the watcher caches them.
type ObjectLookup interface {
	// Resource is the type of apiVersion and kind (false: none known).
	Resource(apiVersion, kind string) (change.Resource, bool)
	// Object is the object as cached now (nil: not cached).
	Object(r change.Resource, namespace, name string) *unstructured.Unstructured
	// Narrowed says whether a label selector picks which objects of r
	// kubediff watches (of every type, watched or not, for the global
	// one): an object not cached is then one it left out.
	Narrowed(r change.Resource) bool
}

// eventFacts is the stage that reads Events as facts.
type eventFacts struct {
	EventOptions
	history Keeper
	cluster *atomic.Pointer[record.Cluster]
	next    *Gate
	now     func() time.Time

	mu    sync.Mutex
	shown map[string]time.Time // object uid and reason → when last seen shown
}

// handle reads one watch event of an Event object. It returns false
// for an Event about an object the label selectors left out (its type's
// watch is narrowed, and the object is not cached): the Event is then
// neither kept nor shown, as a fact or as a change of its own, since
// Events, which carry no labels, are watched whatever the global label
// selector says.
func (s *eventFacts) handle(ev watcher.Event) bool {
	// An Event expiring says nothing about its object; it is a change
	// only of an Event object, when those are reported.
	expired := ev.Type == watcher.Deleted || ev.New == nil
	if expired && !s.AsChanges {
		return true
	}
	u := ev.New
	if expired {
		u = ev.Old
	}
	f, ok := kubeevents.Read(u)
	if !ok {
		return true
	}
	res, ok := s.Objects.Resource(f.Regarding.APIVersion, f.Regarding.Kind)
	if !ok {
		return true // about a type the server does not offer (any more): passed over
	}
	namespace, ok := regardedNamespace(f, res)
	if !ok {
		return true // about another namespace's object: a fact of nothing
	}
	obj := s.Objects.Object(res, namespace, f.Regarding.Name)
	if obj == nil && s.Objects.Narrowed(res) {
		return false
	}
	if expired {
		return true
	}
	if ev.Old != nil {
		if old, ok := kubeevents.Read(ev.Old); ok && old.Event.Count == f.Event.Count && old.Event.Last == f.Event.Last {
			return true // not another occurrence
		}
	}
	s.fact(f, res, namespace, obj)
	return true
}

// regardedNamespace is the namespace of the object an Event is a fact
// of: its own namespace for a namespaced object, none for a
// cluster-scoped one. An Event that names a namespaced object in another
// namespace (events.k8s.io lets its writer set regarding.namespace to
// any) is the fact of nothing (false): whoever may create Events in one
// namespace must not write the history of another, nor be shown to its
// readers. A reference without a namespace (older core v1 clients) means
// the Event's own.
func regardedNamespace(f kubeevents.Fact, res change.Resource) (string, bool) {
	if !res.Namespaced {
		return "", true
	}
	own := f.Event.Namespace
	if own == "" || (f.Regarding.Namespace != "" && f.Regarding.Namespace != own) {
		return "", false
	}
	return own, true
}

// fact keeps f, an occurrence of an Event about obj (nil: not cached),
// and shows it when the stream shows such Events.
func (s *eventFacts) fact(f kubeevents.Fact, res change.Resource, namespace string, obj *unstructured.Unstructured) {
	c := record.Change{Time: record.Timestamp(s.now()), Type: record.EventRecord, APIVersion: res.APIVersion(), Kind: res.Kind,
		Resource: res.GVR.Resource, Namespace: namespace, Name: f.Regarding.Name, UID: f.Regarding.UID,
		ResourceVersion: f.ResourceVersion, Event: &f.Event, Cluster: s.cluster.Load()}
	c.ID = c.StableID()
	owners := s.describe(&c, obj)
	if s.history != nil {
		s.history.Keep(journal.Entry{Change: c, Resource: res, Owners: owners})
	}
	if s.Show != nil && s.Show(f.Event) && s.firstShown(c) {
		s.next.Emit(c)
	}
}

// describe gives c its object's labels and owner, as a record of the
// object has them (u, as cached), and returns the ids of its owners,
// nearest first.
func (s *eventFacts) describe(c *record.Change, u *unstructured.Unstructured) []change.ObjectID {
	if u == nil {
		return nil
	}
	if c.UID == "" {
		c.UID = string(u.GetUID())
	}
	c.Labels = u.GetLabels()
	var owners []change.ObjectID
	for range maxOwners {
		ref := controllerOf(u)
		if ref == nil {
			break
		}
		if c.Owner == nil {
			c.Owner = &record.Owner{Kind: ref.Kind, Name: ref.Name}
		}
		r, ok := s.Objects.Resource(ref.APIVersion, ref.Kind)
		if !ok {
			break
		}
		owners = append(owners, change.NewObjectID(r.GVR.Group, r.GVR.Resource, c.Namespace, ref.Name))
		if u = s.Objects.Object(r, c.Namespace, ref.Name); u == nil {
			break
		}
	}
	return owners
}

// controllerOf is the object's controller's reference (nil: none).
func controllerOf(u *unstructured.Unstructured) *ownerRef {
	for _, ref := range u.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			return &ownerRef{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name}
		}
	}
	return nil
}

type ownerRef struct{ APIVersion, Kind, Name string }

// firstShown says whether c's object and reason were not shown within
// eventRepeat, and notes them shown now: a repeat within it extends it.
func (s *eventFacts) firstShown(c record.Change) bool {
	key := c.Kind + "/" + c.Namespace + "/" + c.Name + "/" + c.UID + "/" + c.Event.Reason
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	last, seen := s.shown[key]
	s.shown[key] = now
	if len(s.shown) > maxShown {
		for k, t := range s.shown {
			if now.Sub(t) >= eventRepeat {
				delete(s.shown, k)
			}
		}
	}
	return !seen || now.Sub(last) >= eventRepeat
}

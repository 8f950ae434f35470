package pipeline

import (
	"sync"
	"time"

	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/watcher"
)

// Deleting a namespace deletes every object in it: the namespace
// controller deletes each, one record each. Those records are marked
// (record.NamespaceDeleting) so that rules about deletions can pass them
// over and the namespace's own record stands for them (docs/rules.md).

// namespaceController is the user the namespace controller deletes as.
const namespaceController = "system:serviceaccount:kube-system:namespace-controller"

// namespaceGoneFor is how long a namespace deleted is remembered: the
// watch of an object's type may deliver the object's deletion after the
// Namespace's own (the controller removes the namespace once empty), and
// identify may hold a record a while before it is judged.
const namespaceGoneFor = 10 * time.Minute

// maxGone bounds the namespaces remembered as deleted.
const maxGone = 10000

// namespaceDeletions says whether a deletion was made while its
// namespace was being deleted. It is safe for concurrent use: every
// reflector's goroutine passes records through it.
type namespaceDeletions struct {
	objects ObjectLookup // the Namespaces as the watcher caches them; nil: none
	now     func() time.Time

	mu   sync.Mutex
	gone map[string]time.Time // namespaces deleted lately → when seen deleted
}

func newNamespaceDeletions(objects ObjectLookup) *namespaceDeletions {
	return &namespaceDeletions{objects: objects, now: time.Now, gone: map[string]time.Time{}}
}

// observe remembers a Namespace deleted, and forgets one made again.
func (n *namespaceDeletions) observe(ev watcher.Event) {
	if gvr := ev.Resource.GVR; gvr.Group != "" || gvr.Resource != "namespaces" {
		return
	}
	name, now := ev.Object().GetName(), n.now()
	n.mu.Lock()
	defer n.mu.Unlock()
	if ev.Type != watcher.Deleted {
		delete(n.gone, name)
		return
	}
	n.gone[name] = now
	if len(n.gone) > maxGone {
		for k, t := range n.gone {
			if now.Sub(t) >= namespaceGoneFor {
				delete(n.gone, k)
			}
		}
	}
}

// mark sets c.NamespaceDeleting on a deletion whose namespace is being
// deleted: the namespace controller made it (identity said), or the
// namespace is terminating in kubediff's cache, or was deleted lately.
func (n *namespaceDeletions) mark(c *record.Change) {
	if c.Type != record.Deleted || c.Namespace == "" {
		return
	}
	c.NamespaceDeleting = (c.User != nil && c.User.Name == namespaceController) || n.terminating(c.Namespace)
}

// terminating says whether kubediff's cache holds the namespace with a
// deletionTimestamp, or saw it deleted within namespaceGoneFor.
func (n *namespaceDeletions) terminating(namespace string) bool {
	n.mu.Lock()
	at, gone := n.gone[namespace]
	n.mu.Unlock()
	if gone && n.now().Sub(at) < namespaceGoneFor {
		return true
	}
	if n.objects == nil {
		return false
	}
	r, ok := n.objects.Resource("v1", "Namespace")
	if !ok {
		return false
	}
	u := n.objects.Object(r, "", namespace)
	return u != nil && u.GetDeletionTimestamp() != nil
}

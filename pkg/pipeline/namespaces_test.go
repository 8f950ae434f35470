package pipeline

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/watcher"
)

var namespacesType = change.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Kind: "Namespace"}

// namespaceCache is an ObjectLookup holding the Namespaces named, those
// in terminating with a deletionTimestamp.
type namespaceCache struct{ live, terminating []string }

func (namespaceCache) Narrowed(change.Resource) bool { return false }

func (namespaceCache) Resource(apiVersion, kind string) (change.Resource, bool) {
	return namespacesType, apiVersion == "v1" && kind == "Namespace"
}

func (n namespaceCache) Object(r change.Resource, namespace, name string) *unstructured.Unstructured {
	u := namespaceObject(name)
	for _, ns := range n.terminating {
		if ns == name {
			now := metav1.Now()
			u.SetDeletionTimestamp(&now)
			return u
		}
	}
	for _, ns := range n.live {
		if ns == name {
			return u
		}
	}
	return nil
}

func namespaceObject(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": name, "uid": "ns-" + name, "resourceVersion": "9"}}}
}

func deletedIn(ns string) watcher.Event {
	return watcher.Event{Event: change.Event{Type: change.Deleted, Resource: configMaps, Old: configMap(ns, "3", nil)}}
}

// A deletion in a namespace being deleted is marked as going with it:
// the namespace is terminating in kubediff's cache, or its deletion was
// seen already (the namespace controller removes it once empty, and the
// watch of an object's type may deliver that object's deletion after
// it). A deletion in a live namespace, or one made again, is not marked.
func TestDeletionsWithTheirNamespaceAreMarked(t *testing.T) {
	gone := func(typ change.Type, name string) watcher.Event {
		ev := watcher.Event{Event: change.Event{Type: typ, Resource: namespacesType, New: namespaceObject(name)}}
		if typ == change.Deleted {
			ev.Old, ev.New = ev.New, nil
		}
		return ev
	}
	got, _ := runPipeline(t, Options{Objects: namespaceCache{live: []string{"shop", "again"}, terminating: []string{"old"}}},
		deletedIn("shop"), deletedIn("old"), gone(change.Deleted, "gone"), deletedIn("gone"), deletedIn("unknown"),
		gone(change.Deleted, "again"), gone(change.Added, "again"), deletedIn("again"), update("old", "v1", "v2"))
	want := map[string]bool{"shop": false, "old": true, "gone": true, "unknown": false, "again": false}
	for _, c := range got {
		if c.Kind != "ConfigMap" {
			continue
		}
		if w, ok := want[c.Namespace]; c.Type == record.Deleted && (!ok || c.NamespaceDeleting != w) {
			t.Errorf("deleted in %s: namespaceDeleting %v, want %v", c.Namespace, c.NamespaceDeleting, w)
		}
		if c.Type != record.Deleted && c.NamespaceDeleting {
			t.Errorf("%s in %s marked namespaceDeleting: only deletions are", c.Type, c.Namespace)
		}
		delete(want, c.Namespace)
	}
	if len(want) > 0 {
		t.Errorf("no deletion record in %v", want)
	}
}

// With no cache of Namespaces (not watched), the namespace controller
// named as the user (identity) says so.
func TestDeletionsByTheNamespaceControllerAreMarked(t *testing.T) {
	for user, want := range map[string]bool{namespaceController: true, "alice": false} {
		c := record.Change{Type: record.Deleted, Namespace: "shop", User: &record.User{Name: user}}
		(&namespaceDeletions{}).mark(&c)
		if c.NamespaceDeleting != want {
			t.Errorf("deleted by %s: namespaceDeleting %v, want %v", user, c.NamespaceDeleting, want)
		}
	}
}

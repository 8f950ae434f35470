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

var (
	eventsType  = change.Resource{GVR: schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}, Kind: "Event", Namespaced: true}
	deployments = change.Resource{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: "Deployment", Namespaced: true}
)

// cluster is an ObjectLookup of a ReplicaSet owned by a Deployment,
// ReplicaSets watched by a label selector that leaves out those named
// left-out.
type cluster struct{}

func (cluster) Narrowed(r change.Resource) bool { return r.Kind == "ReplicaSet" }

func (cluster) Resource(_, kind string) (change.Resource, bool) {
	switch kind {
	case "ReplicaSet":
		return replicaSets, true
	case "Deployment":
		return deployments, true
	}
	return change.Resource{}, false
}

func (cluster) Object(r change.Resource, namespace, name string) *unstructured.Unstructured {
	if name == "left-out" {
		return nil
	}
	u := &unstructured.Unstructured{}
	u.SetNamespace(namespace)
	u.SetName(name)
	if r.Kind == "ReplicaSet" {
		yes := true
		u.SetLabels(map[string]string{"app": "web"})
		u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Controller: &yes}})
	}
	return u
}

func eventObject(reason, typ string, count int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "events.k8s.io/v1", "kind": "Event",
		"metadata":  map[string]any{"name": "web-5d." + reason, "namespace": "shop", "resourceVersion": "7"},
		"regarding": map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "namespace": "shop", "name": "web-5d", "uid": "rs"},
		"reason":    reason, "type": typ, "note": "exceeded quota", "deprecatedCount": count,
	}}
}

// An Event is a fact about its object: kept under the object and its
// owners, shown as the object's record (a warning once while it repeats),
// never reported as a change of the Event object.
func TestEventsAreFactsAboutTheirObjects(t *testing.T) {
	history := &keeper{}
	added := watcher.Event{Event: change.Event{Type: change.Added, Resource: eventsType, New: eventObject("FailedCreate", "Warning", 1)}}
	counted := watcher.Event{Event: change.Event{Type: change.Updated, Resource: eventsType, Old: eventObject("FailedCreate", "Warning", 1), New: eventObject("FailedCreate", "Warning", 2)}}
	normal := watcher.Event{Event: change.Event{Type: change.Added, Resource: eventsType, New: eventObject("SuccessfulCreate", "Normal", 1)}}
	expired := watcher.Event{Event: change.Event{Type: change.Deleted, Resource: eventsType, Old: eventObject("FailedCreate", "Warning", 2)}}
	got, _ := runPipeline(t, Options{History: history, Events: &EventOptions{Show: record.Event.Warning, Objects: cluster{}}}, added, counted, normal, expired)
	if len(got) != 1 {
		t.Fatalf("%d records in the stream, want the warning once: %+v", len(got), got)
	}
	c := got[0]
	if c.Type != record.EventRecord || c.Kind != "ReplicaSet" || c.Name != "web-5d" || c.Owner == nil || c.Owner.Name != "web" ||
		c.Labels["app"] != "web" || c.Event.Reason != "FailedCreate" || c.ID != "rs/7/event" {
		t.Errorf("the warning's record: %+v", c)
	}
	if len(history.entries) != 3 {
		t.Fatalf("%d entries kept, want every occurrence (2 warnings, 1 normal)", len(history.entries))
	}
	if owners := history.entries[0].Owners; len(owners) != 1 || owners[0] != "apps/deployments/shop/web" {
		t.Errorf("kept under %v, want its Deployment too", owners)
	}
}

// An Event about an object the label selector leaves out is neither
// shown nor kept, as a fact or as a change of the Event object: the
// selector picks the objects, and Events are kept for those it picks.
func TestEventsAboutObjectsLeftOutAreNotKept(t *testing.T) {
	leftOut := eventObject("FailedCreate", "Warning", 1)
	leftOut.Object["regarding"].(map[string]any)["name"] = "left-out"
	added := watcher.Event{Event: change.Event{Type: change.Added, Resource: eventsType, New: leftOut}}
	for _, asChanges := range []bool{false, true} {
		history := &keeper{}
		got, _ := runPipeline(t, Options{History: history, Events: &EventOptions{Show: record.Event.Warning, Objects: cluster{}, AsChanges: asChanges}}, added)
		if len(got) != 0 || len(history.entries) != 0 {
			t.Errorf("as changes too %v: %d records shown, %d kept, want none: %+v", asChanges, len(got), len(history.entries), got)
		}
	}
}

// An Event is a fact only of an object in its own namespace: one in shop
// that names an object in bank (events.k8s.io lets its writer name any)
// is neither kept nor shown as bank's, whoever may create Events in shop;
// a reference without a namespace means the Event's own.
func TestEventsStayInTheirNamespace(t *testing.T) {
	for _, tc := range []struct {
		name, regardingNamespace string
		want                     int
	}{{"another namespace", "bank", 0}, {"its own", "shop", 1}, {"none named", "", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			e := eventObject("FailedCreate", "Warning", 1)
			e.Object["regarding"].(map[string]any)["namespace"] = tc.regardingNamespace
			history := &keeper{}
			added := watcher.Event{Event: change.Event{Type: change.Added, Resource: eventsType, New: e}}
			got, _ := runPipeline(t, Options{History: history, Events: &EventOptions{Show: record.Event.Warning, Objects: cluster{}}}, added)
			if len(got) != tc.want || len(history.entries) != tc.want {
				t.Fatalf("%d shown, %d kept, want %d: %+v", len(got), len(history.entries), tc.want, got)
			}
			for _, c := range got {
				if c.Namespace != "shop" {
					t.Errorf("shown as an object of %q: %+v", c.Namespace, c)
				}
			}
		})
	}
}

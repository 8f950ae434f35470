package watcher

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/kubediff/kubediff/pkg/discovery"
)

var configMaps = discovery.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}

func cm(name, rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace("ns")
	u.SetName(name)
	u.SetResourceVersion(rv)
	return u
}

func collect() (*Watcher, *[]Event) {
	var got []Event
	w := New(nil, func(ev Event) { got = append(got, ev) }, Options{})
	return w, &got
}

func TestEventHandler(t *testing.T) {
	tests := []struct {
		name  string
		drive func(h cache.ResourceEventHandler)
		want  []Event
	}{
		{
			name:  "objects in the initial list are not reported",
			drive: func(h cache.ResourceEventHandler) { h.OnAdd(cm("a", "1"), true) },
		},
		{
			name:  "objects added later are",
			drive: func(h cache.ResourceEventHandler) { h.OnAdd(cm("a", "1"), false) },
			want:  []Event{{Type: Added, Resource: configMaps, New: cm("a", "1")}},
		},
		{
			name:  "a resync (same resourceVersion) is not an update",
			drive: func(h cache.ResourceEventHandler) { h.OnUpdate(cm("a", "5"), cm("a", "5")) },
		},
		{
			name:  "a new resourceVersion is",
			drive: func(h cache.ResourceEventHandler) { h.OnUpdate(cm("a", "5"), cm("a", "6")) },
			want:  []Event{{Type: Updated, Resource: configMaps, Old: cm("a", "5"), New: cm("a", "6")}},
		},
		{
			name:  "deletes are reported with the last state",
			drive: func(h cache.ResourceEventHandler) { h.OnDelete(cm("a", "7")) },
			want:  []Event{{Type: Deleted, Resource: configMaps, Old: cm("a", "7")}},
		},
		{
			name: "a tombstone from a missed delete is unwrapped",
			drive: func(h cache.ResourceEventHandler) {
				h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: cm("a", "7")})
			},
			want: []Event{{Type: Deleted, Resource: configMaps, Old: cm("a", "7"), FinalStateUnknown: true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, got := collect()
			tt.drive(w.eventHandler(configMaps))
			if !reflect.DeepEqual(*got, tt.want) {
				t.Fatalf("events = %+v, want %+v", *got, tt.want)
			}
		})
	}
}

func TestCachedObjectsAreCompactAndExpandOnEvents(t *testing.T) {
	w, got := collect()
	transform := w.cacheTransform(configMaps)
	cached := func(rv, value string) any {
		u := cm("a", rv)
		u.Object["data"] = map[string]any{"k": value}
		out, err := transform(u)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := out.(*compactObject); !ok {
			t.Fatalf("cached %T, want the compact form", out)
		}
		return out
	}
	h := w.eventHandler(configMaps)
	v1, v2 := cached("5", "one"), cached("6", "two")
	h.OnUpdate(v1, v1) // resync
	h.OnUpdate(v1, v2)
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: v2})
	if len(*got) != 2 {
		t.Fatalf("events = %+v, want an update and a delete", *got)
	}
	up := (*got)[0]
	if up.Type != Updated || up.Old.Object["data"].(map[string]any)["k"] != "one" || up.New.Object["data"].(map[string]any)["k"] != "two" {
		t.Fatalf("update = %+v", up)
	}
	if del := (*got)[1]; del.Type != Deleted || del.Old.GetResourceVersion() != "6" || del.Old.GetName() != "a" {
		t.Fatalf("delete = %+v", del)
	}
}

package diff

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/record"
)

var fixedNow = func() time.Time { return time.Date(2026, 11, 22, 10, 4, 5, 123456789, time.UTC) }

func obj(t testing.TB, js string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(js)); err != nil {
		t.Fatal(err)
	}
	return u
}

var configMaps = change.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}

func update(t testing.TB, oldJS, newJS string) change.Event {
	return change.Event{Type: change.Updated, Resource: configMaps, Old: obj(t, oldJS), New: obj(t, newJS)}
}

const cmBase = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app","namespace":"ns","uid":"u-1","resourceVersion":"%s","generation":%d,
 "annotations":{"kubectl.kubernetes.io/last-applied-configuration":"%s","team":"a"},
 "managedFields":[{"manager":"%s","operation":"Update"}]},"data":%s}`

func cm(t testing.TB, rv string, gen int, lastApplied, manager, data string) string {
	t.Helper()
	return sprintf(cmBase, rv, gen, lastApplied, manager, data)
}

func TestDiff(t *testing.T) {
	tests := []struct {
		name        string
		ev          change.Event
		opts        Options
		wantChanges []record.FieldChange
		wantChanged string
		wantNothing bool
	}{
		{
			name:        "one key replaced",
			ev:          update(t, cm(t, "1", 1, "x", "kubectl", `{"k":"v1","o":"x"}`), cm(t, "2", 1, "x", "kubectl", `{"k":"v2","o":"x"}`)),
			wantChanges: []record.FieldChange{{Op: record.OpReplace, Path: "/data/k", Field: "data.k", From: "v1", To: "v2"}},
			wantChanged: "data.k",
		},
		{
			name: "keys added and removed, with / and ~ escaped",
			ev:   update(t, cm(t, "1", 1, "x", "m", `{"a/b":"1","keep":"k"}`), cm(t, "2", 1, "x", "m", `{"keep":"k","c~d":"2"}`)),
			wantChanges: []record.FieldChange{
				{Op: record.OpRemove, Path: "/data/a~1b", Field: `data["a/b"]`, From: "1"},
				{Op: record.OpAdd, Path: "/data/c~0d", Field: `data["c~d"]`, To: "2"},
			},
			wantChanged: `data["a/b"], data["c~d"]`,
		},
		{
			name:        "only default-ignored fields changed",
			ev:          update(t, cm(t, "1", 1, "old", "kubectl", `{"k":"v"}`), cm(t, "2", 2, "new", "helm", `{"k":"v"}`)),
			wantNothing: true,
		},
		{
			name:        "configured ignore path with a wildcard",
			ev:          update(t, cm(t, "1", 1, "x", "m", `{"k":"v","t1":"a"}`), cm(t, "2", 1, "x", "m", `{"k":"v","t1":"b"}`)),
			opts:        Options{Rules: Rules{Paths: []string{"/*/t1"}}},
			wantNothing: true,
		},
		{
			name: "list items compared by position, readable indices",
			ev: update(t,
				`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","resourceVersion":"1"},"spec":{"replicas":1,"template":{"spec":{"containers":[{"name":"web","image":"nginx:1"}]}}}}`,
				`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","resourceVersion":"2"},"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"web","image":"nginx:2"}]}}}}`),
			wantChanges: []record.FieldChange{
				{Op: record.OpReplace, Path: "/spec/replicas", Field: "spec.replicas", From: int64(1), To: int64(3)},
				{Op: record.OpReplace, Path: "/spec/template/spec/containers/0/image", Field: "spec.template.spec.containers[0].image", From: "nginx:1", To: "nginx:2"},
			},
			wantChanged: "spec.replicas, spec.template.spec.containers[0].image",
		},
		{
			name: "annotation that only held an ignored key does not appear as added",
			ev: update(t,
				`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"1"},"data":{"k":"v"}}`,
				`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"2","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"}},"data":{"k":"v"}}`),
			wantNothing: true,
		},
		{
			name: "a value changing type",
			ev:   update(t, cm(t, "1", 1, "x", "m", `{"k":"v"}`), `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app","namespace":"ns","uid":"u-1","resourceVersion":"2"},"data":{"k":{"nested":true}}}`),
			wantChanges: []record.FieldChange{
				{Op: record.OpReplace, Path: "/data/k", Field: "data.k", From: "v", To: map[string]any{"nested": true}},
				{Op: record.OpRemove, Path: "/metadata/annotations", Field: "metadata.annotations", From: map[string]any{"team": "a"}},
			},
			wantChanged: "data.k, metadata.annotations",
		},
		{
			name: "numbers sort numerically in paths",
			ev: update(t,
				`{"kind":"X","metadata":{"resourceVersion":"1"},"l":[0,1,2,3,4,5,6,7,8,9,10,11]}`,
				`{"kind":"X","metadata":{"resourceVersion":"2"},"l":[0,1,-2,3,4,5,6,7,8,9,-10,11]}`),
			wantChanges: []record.FieldChange{
				{Op: record.OpReplace, Path: "/l/2", Field: "l[2]", From: int64(2), To: int64(-2)},
				{Op: record.OpReplace, Path: "/l/10", Field: "l[10]", From: int64(10), To: int64(-10)},
			},
			wantChanged: "l[2], l[10]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Now = fixedNow
			tt.opts.Rules.Defaults = AllDefaults
			d, err := New(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			c, ok := d.Diff(tt.ev)
			if tt.wantNothing {
				if ok {
					t.Fatalf("want no record, got %+v", c.Changes)
				}
				return
			}
			if !ok {
				t.Fatal("want a record, got none")
			}
			if !reflect.DeepEqual(c.Changes, tt.wantChanges) {
				got, _ := json.Marshal(c.Changes)
				want, _ := json.Marshal(tt.wantChanges)
				t.Fatalf("changes:\n got %s\nwant %s", got, want)
			}
			if c.Changed != tt.wantChanged {
				t.Fatalf("changed = %q, want %q", c.Changed, tt.wantChanged)
			}
		})
	}
}

func TestDiffNeverModifiesTheCachedObjects(t *testing.T) {
	ev := update(t, cm(t, "1", 1, "a", "m", `{"k":"v1"}`), cm(t, "2", 2, "b", "m", `{"k":"v2"}`))
	before := ev.Old.DeepCopy()
	d, _ := New(Options{Rules: Rules{Paths: []string{"/data/k"}, Defaults: AllDefaults}})
	d.Diff(ev)
	if !reflect.DeepEqual(before.Object, ev.Old.Object) {
		t.Fatal("Diff modified the old object, which belongs to the watcher's cache")
	}
	if _, ok := ev.New.Object["data"].(map[string]any)["k"]; !ok {
		t.Fatal("Diff removed an ignored field from the new object, which belongs to the watcher's cache")
	}
}

func TestAddedAndDeletedRecordsIdentifyTheObject(t *testing.T) {
	d, _ := New(Options{Now: fixedNow})
	o := obj(t, cm(t, "7", 1, "x", "m", `{"k":"v"}`))
	for _, ev := range []change.Event{
		{Type: change.Added, Resource: configMaps, New: o},
		{Type: change.Deleted, Resource: configMaps, Old: o},
	} {
		c, ok := d.Diff(ev)
		want := record.Change{ID: "u-1/7/" + string(ev.Type), Time: record.Timestamp(fixedNow()), Type: string(ev.Type), APIVersion: "v1", Kind: "ConfigMap",
			Resource: "configmaps", Namespace: "ns", Name: "app", UID: "u-1", ResourceVersion: "7"}
		if ev.Type == change.Added {
			want.Manager = &record.Manager{Name: "m", Operation: "Update"}
		}
		if !ok || !reflect.DeepEqual(c, want) {
			t.Errorf("%s: got %+v, want %+v", ev.Type, c, want)
		}
	}
}

func TestNewRejectsMalformedIgnorePaths(t *testing.T) {
	for _, p := range []string{"data.k", ""} {
		if _, err := New(Options{Rules: Rules{Paths: []string{p}}}); err == nil {
			t.Errorf("ignore path %q accepted", p)
		}
	}
}

func TestTimestampHasMilliseconds(t *testing.T) {
	b, _ := json.Marshal(record.Timestamp(fixedNow()))
	if string(b) != `"2026-11-22T10:04:05.123Z"` {
		t.Fatalf("timestamp = %s", b)
	}
}

func TestDeletionAfterAWatchGapHasNoResourceVersion(t *testing.T) {
	d, _ := New(Options{Now: fixedNow})
	c, _ := d.Diff(change.Event{Type: change.Deleted, Resource: configMaps, Old: obj(t, cm(t, "7", 1, "x", "m", `{}`)), FinalStateUnknown: true})
	if c.ResourceVersion != "" || c.LastSeenResourceVersion != "7" {
		t.Fatalf("resourceVersion %q, lastSeen %q; want empty and 7", c.ResourceVersion, c.LastSeenResourceVersion)
	}
	if c.ID != "u-1/last-7/deleted" {
		t.Fatalf("id = %q, want u-1/last-7/deleted", c.ID)
	}
}

func TestRecordNamesTheController(t *testing.T) {
	d, _ := New(Options{Now: fixedNow})
	pod := obj(t, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1","namespace":"ns","ownerReferences":[
		{"apiVersion":"v1","kind":"Node","name":"n1","uid":"x"},
		{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-5d4f","uid":"y","controller":true}]}}`)
	c, _ := d.Diff(change.Event{Type: change.Added, Resource: configMaps, New: pod})
	if c.Owner == nil || c.Owner.String() != "ReplicaSet/web-5d4f" {
		t.Fatalf("owner = %v, want the controller ReplicaSet/web-5d4f (not the other owner)", c.Owner)
	}
	lone, _ := d.Diff(change.Event{Type: change.Added, Resource: configMaps, New: obj(t, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"solo"}}`)})
	if lone.Owner != nil {
		t.Fatalf("owner = %v for an object without ownerReferences", lone.Owner)
	}
}

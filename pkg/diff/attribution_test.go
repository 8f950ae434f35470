package diff_test

import (
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/record"
)

// fieldsV1 builds a field set from paths of field names ("spec",
// "replicas"), as the API server writes them ("f:spec": {"f:replicas": {}}).
func fieldsV1(paths ...[]string) map[string]any {
	set := map[string]any{}
	for _, p := range paths {
		node := set
		for _, name := range p {
			child, ok := node["f:"+name].(map[string]any)
			if !ok {
				child = map[string]any{".": map[string]any{}}
				node["f:"+name] = child
			}
			node = child
		}
	}
	return set
}

func addEntry(u *unstructured.Unstructured, name, subresource, time string, owned map[string]any) {
	entries, _, _ := unstructured.NestedSlice(u.Object, "metadata", "managedFields")
	e := map[string]any{"manager": name, "operation": "Update", "apiVersion": "apps/v1", "fieldsType": "FieldsV1", "fieldsV1": owned}
	if subresource != "" {
		e["subresource"] = subresource
	}
	if time != "" {
		e["time"] = time
	}
	_ = unstructured.SetNestedSlice(u.Object, append(entries, e), "metadata", "managedFields")
}

// next is obj's next state: a copy with a new resourceVersion, changed by
// change.
func next(obj *unstructured.Unstructured, rv string, change func(*unstructured.Unstructured)) *unstructured.Unstructured {
	n := obj.DeepCopy()
	n.SetResourceVersion(rv)
	change(n)
	return n
}

// A manager that writes fields it owns already gets no new time in
// managedFields (the `kubectl scale` entry never has one): the second
// scale, after the deployment controller wrote status, moves no entry,
// and the newest entry is the controller's. The record names the entry
// that owns the changed field, and never a status writer for a spec
// change; raw objects and cache-slimmed ones alike.
func TestRepeatedWriteIsAttributedToTheOwnerOfTheChangedField(t *testing.T) {
	scaled := loadCase(t, filepath.Join("testdata", "corpus", "deployment-scale")).New // kubectl scale --replicas=5, recorded
	statusWritten := next(scaled, "213", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, int64(5), "status", "replicas")
		addEntry(u, "kube-controller-manager", "status", "2026-11-22T01:19:40Z",
			fieldsV1([]string{"status", "replicas"}, []string{"status", "conditions"}, []string{"status", "observedGeneration"}))
	})
	scaledAfterStatus := next(statusWritten, "2131", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, int64(2), "spec", "replicas")
	})
	annotated := next(statusWritten, "214", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "first", "metadata", "annotations", "note")
		addEntry(u, "kubectl-annotate", "", "2026-11-22T01:19:41Z", fieldsV1([]string{"metadata", "annotations", "note"}))
	})
	rolled := next(annotated, "215", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "3", "metadata", "annotations", "deployment.kubernetes.io/revision")
		addEntry(u, "kube-controller-manager", "", "2026-11-22T01:19:50Z",
			fieldsV1([]string{"metadata", "annotations", "deployment.kubernetes.io/revision"}))
	})
	scaledDown := next(rolled, "216", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, int64(2), "spec", "replicas")
	})
	annotatedAgain := next(scaledDown, "217", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "second", "metadata", "annotations", "note")
	})

	for _, tc := range []struct {
		name     string
		old, new *unstructured.Unstructured
		changed  string
		want     record.Manager
	}{
		{"kubectl scale --replicas=2 after a status write", statusWritten, scaledAfterStatus, "spec.replicas", record.Manager{Name: "kubectl", Operation: "Update", Subresource: "scale"}},
		{"kubectl scale --replicas=2 after a status write and an annotation", rolled, scaledDown, "spec.replicas", record.Manager{Name: "kubectl", Operation: "Update", Subresource: "scale"}},
		{"kubectl annotate again after the controller annotated", scaledDown, annotatedAgain, "metadata.annotations.note",
			record.Manager{Name: "kubectl-annotate", Operation: "Update", Time: "2026-11-22T01:19:41Z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := change.Event{Type: change.Updated, Resource: resources["Deployment"], Old: tc.old, New: tc.new}
			raw := newDiffer(t, loadKeys(t))
			cached := newDifferOpts(t, loadKeys(t), true)
			transform := cached.CacheTransform(ev.Resource)
			slimOld, _ := transform(tc.old.DeepCopy())
			slimNew, _ := transform(tc.new.DeepCopy())
			slim := change.Event{Type: change.Updated, Resource: ev.Resource, Old: slimOld.(*unstructured.Unstructured), New: slimNew.(*unstructured.Unstructured)}
			for name, got := range map[string]record.Change{"raw": diffOK(t, raw, ev), "cached": diffOK(t, cached, slim)} {
				if got.Changed != tc.changed {
					t.Fatalf("%s: changed %q, want %q", name, got.Changed, tc.changed)
				}
				if got.Manager == nil || *got.Manager != tc.want {
					t.Errorf("%s: manager %+v, want %+v", name, got.Manager, tc.want)
				}
			}
		})
	}
}

func diffOK(t *testing.T, d interface {
	Diff(change.Event) (record.Change, bool)
}, ev change.Event) record.Change {
	t.Helper()
	c, ok := d.Diff(ev)
	if !ok {
		t.Fatalf("no record for %s → %s", ev.Old.GetResourceVersion(), ev.New.GetResourceVersion())
	}
	return c
}

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
			checkManager(t, tc.old, tc.new, tc.changed, &tc.want)
		})
	}
}

// A Secret written with stringData (a Helm chart's) changes data, while
// its writer's entry owns stringData: the API server turns one into the
// other after recording who wrote it. An upgrade in the second of the
// install moves no time, and the owner of the key's stringData wrote it.
func TestSecretDataIsOwnedThroughStringData(t *testing.T) {
	installed := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "web-login", "namespace": "shop", "uid": "s-1", "resourceVersion": "10"},
		"data":     map[string]any{"password": "Zmlyc3Q="},
	}}
	addEntry(installed, "helm", "", "2026-11-22T01:19:10Z", fieldsV1([]string{"stringData", "password"}))
	applyOperation(installed, "helm")
	upgraded := next(installed, "11", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "c2Vjb25k", "data", "password")
	})
	checkManager(t, installed, upgraded, "data.password", &record.Manager{Name: "helm", Operation: "Apply", Time: "2026-11-22T01:19:10Z"})
}

// checkManager diffs old against new, raw and as the cache keeps them
// (managedFields slimmed), and checks both records change changed and
// name want (nil: no one).
func checkManager(t *testing.T, old, new *unstructured.Unstructured, changed string, want *record.Manager) {
	t.Helper()
	ev := change.Event{Type: change.Updated, Resource: resources[new.GetKind()], Old: old, New: new}
	raw := newDiffer(t, loadKeys(t))
	cached := newDifferOpts(t, loadKeys(t), true)
	transform := cached.CacheTransform(ev.Resource)
	slimOld, _ := transform(old.DeepCopy())
	slimNew, _ := transform(new.DeepCopy())
	slim := change.Event{Type: change.Updated, Resource: ev.Resource, Old: slimOld.(*unstructured.Unstructured), New: slimNew.(*unstructured.Unstructured)}
	for name, got := range map[string]record.Change{"raw": diffOK(t, raw, ev), "cached": diffOK(t, cached, slim)} {
		if got.Changed != changed {
			t.Fatalf("%s: changed %q, want %q", name, got.Changed, changed)
		}
		if (got.Manager == nil) != (want == nil) || got.Manager != nil && *got.Manager != *want {
			t.Errorf("%s: manager %+v, want %+v", name, got.Manager, want)
		}
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

// removeEntry drops the managedFields entry of name on subresource, as
// the API server does when a write leaves it owning nothing.
func removeEntry(u *unstructured.Unstructured, name, subresource string) {
	entries, _, _ := unstructured.NestedSlice(u.Object, "metadata", "managedFields")
	var kept []any
	for _, e := range entries {
		m := e.(map[string]any)
		if sub, _ := m["subresource"].(string); m["manager"] != name || sub != subresource {
			kept = append(kept, m)
		}
	}
	_ = unstructured.SetNestedSlice(u.Object, kept, "metadata", "managedFields")
}

// applyOperation makes name's entry a server-side apply's.
func applyOperation(u *unstructured.Unstructured, name string) {
	entries, _, _ := unstructured.NestedSlice(u.Object, "metadata", "managedFields")
	for _, e := range entries {
		if m := e.(map[string]any); m["manager"] == name {
			m["operation"] = "Apply"
		}
	}
	_ = unstructured.SetNestedSlice(u.Object, entries, "metadata", "managedFields")
}

// disown drops path from every entry's field set, as a write that
// removes or takes over the field does.
func disown(u *unstructured.Unstructured, path ...string) {
	entries, _, _ := unstructured.NestedSlice(u.Object, "metadata", "managedFields")
	for _, e := range entries {
		set, _ := e.(map[string]any)["fieldsV1"].(map[string]any)
		for i, name := range path {
			if i == len(path)-1 {
				delete(set, "f:"+name)
				break
			}
			if set, _ = set["f:"+name].(map[string]any); set == nil {
				break
			}
		}
	}
	_ = unstructured.SetNestedSlice(u.Object, entries, "metadata", "managedFields")
}

// A field no entry owns after the write, whose writer moved no time,
// names no one: `kubectl scale --replicas=0` leaves no entry for the zero
// (the Scale's spec.replicas is omitempty), and the newest other entry
// (`kubectl set image`'s) did not make it. The scale back up brings the
// scale entry back, owning spec.replicas, and names kubectl again. An
// entry whose time moved is named even when it owns none of the changes
// (an Apply dropping a field); an Update that only removes a field moves
// no time, owns nothing after, and names no one.
func TestAFieldNoEntryOwnsNamesNoOne(t *testing.T) {
	scaled := loadCase(t, filepath.Join("testdata", "corpus", "deployment-scale")).New // kubectl scale --replicas=5, recorded
	imageSet := next(scaled, "300", func(u *unstructured.Unstructured) {
		containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		containers[0].(map[string]any)["image"] = "nginx:1.28"
		_ = unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers")
		removeEntry(u, "kubectl-set", "")
		addEntry(u, "kubectl-set", "", "2026-11-22T01:20:00Z", fieldsV1([]string{"spec", "template", "spec", "containers"}))
	})
	zero := next(imageSet, "301", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, int64(0), "spec", "replicas")
		removeEntry(u, "kubectl", "scale")
	})
	upFromZero := next(zero, "302", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, int64(2), "spec", "replicas")
		addEntry(u, "kubectl", "scale", "", fieldsV1([]string{"spec", "replicas"}))
	})
	labelled := next(imageSet, "310", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "front", "metadata", "labels", "tier")
		addEntry(u, "kubectl-label", "", "2026-11-22T01:20:10Z", fieldsV1([]string{"metadata", "labels", "tier"}))
	})
	unlabelled := next(labelled, "311", func(u *unstructured.Unstructured) {
		unstructured.RemoveNestedField(u.Object, "metadata", "labels", "tier")
		removeEntry(u, "kubectl-label", "")
	})
	applied := next(imageSet, "320", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedStringMap(u.Object, map[string]string{"a": "1", "b": "2"}, "metadata", "annotations")
		addEntry(u, "kustomize-controller", "", "2026-11-22T01:20:20Z",
			fieldsV1([]string{"metadata", "annotations", "a"}, []string{"metadata", "annotations", "b"}))
		applyOperation(u, "kustomize-controller")
	})
	appliedWithoutB := next(applied, "321", func(u *unstructured.Unstructured) {
		unstructured.RemoveNestedField(u.Object, "metadata", "annotations", "b")
		disown(u, "metadata", "annotations", "b")
		removeEntry(u, "kustomize-controller", "")
		addEntry(u, "kustomize-controller", "", "2026-11-22T01:20:30Z", fieldsV1([]string{"metadata", "annotations", "a"}))
		applyOperation(u, "kustomize-controller")
	})
	edited := next(imageSet, "330", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, int64(30), "spec", "progressDeadlineSeconds")
		addEntry(u, "kubectl-edit", "", "2026-11-22T01:20:40Z", fieldsV1([]string{"spec", "progressDeadlineSeconds"}))
	})
	envRemoved := next(imageSet, "340", func(u *unstructured.Unstructured) {
		containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		env := containers[0].(map[string]any)["env"].([]any)
		containers[0].(map[string]any)["env"] = env[:len(env)-1]
		_ = unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers")
	})
	imageSetAgain := next(imageSet, "350", func(u *unstructured.Unstructured) {
		containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		containers[0].(map[string]any)["image"] = "nginx:1.29"
		_ = unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers")
	})
	scale := &record.Manager{Name: "kubectl", Operation: "Update", Subresource: "scale"}
	for _, tc := range []struct {
		name     string
		old, new *unstructured.Unstructured
		changed  string
		want     *record.Manager
	}{
		{"kubectl scale --replicas=0 after kubectl set image", imageSet, zero, "spec.replicas", nil},
		{"kubectl scale --replicas=2 from zero", zero, upFromZero, "spec.replicas", scale},
		{"kubectl scale --replicas=2 from 5", imageSet, next(imageSet, "303", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(2), "spec", "replicas")
		}), "spec.replicas", scale},
		{"kubectl label tier-", labelled, unlabelled, "metadata.labels.tier", nil},
		{"an apply that drops an annotation", applied, appliedWithoutB, "metadata.annotations.b",
			&record.Manager{Name: "kustomize-controller", Operation: "Apply", Time: "2026-11-22T01:20:30Z"}},
		{"kubectl edit of a field", imageSet, edited, "spec.progressDeadlineSeconds",
			&record.Manager{Name: "kubectl-edit", Operation: "Update", Time: "2026-11-22T01:20:40Z"}},
		// Below the levels kept, kubectl-set and kubectl-client-side-apply
		// may both own what a container holds: a removal there (no time
		// moves) names no one, and so does a second image set in the
		// second of the first (its time cannot move either).
		{"kubectl edit removing a container's env var", imageSet, envRemoved, "spec.template.spec.containers[name=web].env[name=E10]", nil},
		{"kubectl set image again in the same second", imageSet, imageSetAgain, "spec.template.spec.containers[name=web].image", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkManager(t, tc.old, tc.new, tc.changed, tc.want)
		})
	}
}

// Package restore makes an object kept in kubediff's history into a
// manifest ready for server-side apply, as Velero's restore does with a
// backed-up object: what the API server sets (uid, resourceVersion,
// managedFields, status, creation time, generation) is left out, owner
// references to objects gone are dropped, and a state kubediff did not
// keep whole (a Secret's values, fields its rules prune, any redacted
// value) is refused rather than written back with a hole in it.
package restore

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kubediff/kubediff/pkg/diff"
)

// ErrIncomplete says the kept state lacks something the object had: a
// restore would write a placeholder or drop a field.
var ErrIncomplete = errors.New("cannot restore: the kept state is incomplete")

// Options say what Prepare needs to know beyond the state.
type Options struct {
	// Group and Resource are the object's type.
	Group, Resource string
	// Ignored are the JSON Pointers kubediff's rules prune from kept
	// states of the type ("*": any key), diff.Differ.IgnoredPaths.
	Ignored []string
	// OwnerExists says whether the object an owner reference names exists
	// now (same uid); an error when that cannot be told.
	OwnerExists func(ref map[string]any) (bool, error)
}

// Manifest is an object ready for server-side apply, and what was left
// out of it that its reader should know.
type Manifest struct {
	Object   map[string]any `json:"manifest"`
	Warnings []string       `json:"warnings,omitempty"`
}

// serverSet are the metadata fields the API server sets: an apply must
// not carry them (a uid or resourceVersion would make it fail or
// conflict).
var serverSet = []string{"uid", "resourceVersion", "managedFields", "creationTimestamp", "generation", "selfLink",
	"deletionTimestamp", "deletionGracePeriodSeconds"}

// controllerAnnotations are annotations controllers write and rewrite on
// their own: a restore without them loses nothing.
var controllerAnnotations = []string{"kubectl.kubernetes.io/last-applied-configuration", "deployment.kubernetes.io/revision",
	"endpoints.kubernetes.io/last-change-trigger-time", "kubediff.io/delivered-through"}

// Prepare makes the kept state obj (a decoded copy the caller gives up)
// a manifest for server-side apply, or says why it cannot
// (ErrIncomplete).
func Prepare(obj map[string]any, o Options) (Manifest, error) {
	if o.Group == "" && o.Resource == "secrets" {
		return Manifest{}, fmt.Errorf("%w: a Secret's values are redacted in kubediff's history (never kept), so it cannot be put back; restore it from where it was made", ErrIncomplete)
	}
	if p := prunedField(o.Ignored); p != "" {
		return Manifest{}, fmt.Errorf("%w: kubediff's rules prune %s from every kept %s (diff.ignore or a built-in rule), so the kept state may lack it", ErrIncomplete, p, o.Resource)
	}
	m := Manifest{Object: obj}
	delete(obj, "status")
	meta, _ := obj["metadata"].(map[string]any)
	for _, f := range serverSet {
		delete(meta, f)
	}
	if p := redactedField(obj, nil); p != "" {
		return Manifest{}, fmt.Errorf("%w: %s holds a value kubediff redacted; a restore never writes the placeholder into the cluster", ErrIncomplete, p)
	}
	switch {
	case o.Group == "" && o.Resource == "services":
		dropClusterIPs(obj)
	case o.Group == "batch" && o.Resource == "jobs":
		dropGeneratedSelector(obj)
	case o.Group == "" && o.Resource == "pods":
		dropPlacement(obj)
	}
	m.Warnings = keepLiveOwners(meta, o.OwnerExists)
	return m, nil
}

// prunedField is the first pruned pointer that a manifest would carry:
// not one the API server or a controller sets.
func prunedField(ignored []string) string {
	for _, p := range ignored {
		segs, err := diff.ParsePointer(p)
		if err != nil || len(segs) == 0 {
			continue
		}
		switch {
		case segs[0] == "status":
		case segs[0] == "metadata" && len(segs) > 1 && slices.Contains(serverSet, segs[1]):
		case segs[0] == "metadata" && len(segs) == 3 && segs[1] == "annotations" && slices.Contains(controllerAnnotations, segs[2]):
		default:
			return p
		}
	}
	return ""
}

// keepLiveOwners drops the owner references to objects that no longer
// exist, and says which it dropped or could not check.
func keepLiveOwners(meta map[string]any, exists func(map[string]any) (bool, error)) []string {
	refs, _ := meta["ownerReferences"].([]any)
	if len(refs) == 0 || exists == nil {
		return nil
	}
	var kept []any
	var warnings []string
	for _, r := range refs {
		ref, _ := r.(map[string]any)
		name := fmt.Sprintf("%v %v", ref["kind"], ref["name"])
		ok, err := exists(ref)
		switch {
		case err != nil:
			warnings = append(warnings, fmt.Sprintf("owner reference to %s kept: whether it still exists cannot be told (%v)", name, err))
			kept = append(kept, r)
		case ok:
			kept = append(kept, r)
		default:
			warnings = append(warnings, fmt.Sprintf("owner reference to %s left out: it no longer exists (uid %v)", name, ref["uid"]))
		}
	}
	if len(kept) == 0 {
		delete(meta, "ownerReferences")
	} else {
		meta["ownerReferences"] = kept
	}
	return warnings
}

// dropClusterIPs leaves the API server to allocate a Service's address
// again, as Velero does: the old one may be taken. A headless Service
// keeps its None.
func dropClusterIPs(obj map[string]any) {
	spec, _ := obj["spec"].(map[string]any)
	if ip, _ := spec["clusterIP"].(string); ip != "None" {
		delete(spec, "clusterIP")
		delete(spec, "clusterIPs")
	}
}

// dropPlacement leaves a Pod to be placed again, as Velero does: the
// node it was bound to may be gone, cordoned or full (a Pod that names
// its node skips the scheduler). What admission filled in from the
// Pod's classes (priority and preemptionPolicy from its
// priorityClassName, overhead from its runtimeClassName) is filled in
// again: the API server refuses values that no longer match. Ephemeral
// containers cannot be set when a Pod is created.
func dropPlacement(obj map[string]any) {
	spec, _ := obj["spec"].(map[string]any)
	for _, f := range []string{"nodeName", "priority", "preemptionPolicy", "overhead", "ephemeralContainers"} {
		delete(spec, f)
	}
}

// jobUIDLabels are the labels the API server gives a Job and its Pods'
// template from the Job's uid, and selects them by.
var jobUIDLabels = []string{"controller-uid", "batch.kubernetes.io/controller-uid"}

// dropGeneratedSelector leaves the API server to generate a Job's
// selector again, as Velero does: it made the old one from the old Job's
// uid, and refuses a new Job that carries it ("selector not
// auto-generated"). A Job whose selector its author wrote
// (spec.manualSelector) keeps it.
func dropGeneratedSelector(obj map[string]any) {
	spec, _ := obj["spec"].(map[string]any)
	if manual, _ := spec["manualSelector"].(bool); manual {
		return
	}
	delete(spec, "selector")
	template, _ := spec["template"].(map[string]any)
	for _, meta := range []any{obj["metadata"], template["metadata"]} {
		m, _ := meta.(map[string]any)
		labels, _ := m["labels"].(map[string]any)
		for _, l := range jobUIDLabels {
			delete(labels, l)
		}
	}
}

// redactedField is the first place in v (sorted keys) that holds a
// redaction marker, as records name fields; "" when none.
func redactedField(v any, at []string) string {
	switch val := v.(type) {
	case string:
		if strings.Contains(val, "*** redacted ") {
			return strings.Join(at, ".")
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(val)) {
			if p := redactedField(val[k], append(slices.Clip(at), k)); p != "" {
				return p
			}
		}
	case []any:
		for i, item := range val {
			if p := redactedField(item, append(slices.Clip(at), fmt.Sprintf("[%d]", i))); p != "" {
				return strings.ReplaceAll(p, ".[", "[")
			}
		}
	}
	return ""
}

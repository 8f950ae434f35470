package watcher

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// stripForCache runs on every object before the informer caches it.
// managedFields' fieldsV1 sets are the largest part of most objects once
// decoded (~40%) and are never reported; each entry keeps its manager,
// operation, time and subresource, which is what attribution compares
// between the old and new object to say who made a change.
func stripForCache(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	meta, ok := u.Object["metadata"].(map[string]any)
	if !ok {
		return obj, nil
	}
	entries, ok := meta["managedFields"].([]any)
	if !ok {
		return obj, nil
	}
	kept := make([]any, 0, len(entries))
	for _, e := range entries {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		slim := make(map[string]any, 4)
		for _, k := range []string{"manager", "operation", "time", "subresource"} {
			if v, ok := m[k]; ok {
				slim[k] = v
			}
		}
		kept = append(kept, slim)
	}
	meta["managedFields"] = kept
	return obj, nil
}

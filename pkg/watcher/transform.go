package watcher

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// stripForCache runs on every object before the informer caches it.
// managedFields is the largest part of most objects once decoded (~40%) and
// is never reported; only the newest entry's manager, operation and time are
// kept, which is what attribution needs to say who made a change.
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
	if newest := newestManager(entries); newest != nil {
		meta["managedFields"] = []any{newest}
	} else {
		delete(meta, "managedFields")
	}
	return obj, nil
}

// newestManager returns the entry with the latest time, reduced to the
// fields attribution uses. Times are RFC 3339 strings in UTC with second
// precision, so comparing them as strings orders them.
func newestManager(entries []any) map[string]any {
	var newest map[string]any
	var newestTime string
	for _, e := range entries {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		t, _ := m["time"].(string)
		if newest == nil || t >= newestTime {
			newest, newestTime = m, t
		}
	}
	if newest == nil {
		return nil
	}
	kept := map[string]any{}
	for _, k := range []string{"manager", "operation", "time", "subresource"} {
		if v, ok := newest[k]; ok {
			kept[k] = v
		}
	}
	return kept
}

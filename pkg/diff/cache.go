package diff

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubediff/kubediff/pkg/change"
)

// keptInCache are ignored fields the watcher still needs: resourceVersion
// to resume watches and tell a new state from a repeated one, and
// managedFields (slimmed) to say who made a change.
var keptInCache = pathRules{{"metadata", "resourceVersion"}, {"metadata", "managedFields"}}

// CacheTransform returns the cache transform for r: it drops what is
// never reported before the object is cached (ignored fields, managedFields'
// field sets) and redacts sensitive values, so that the cache is smaller,
// each update has less to compare, and Secret values never sit in memory in
// the clear. Diff gives the same result on transformed and raw objects.
func (d *Differ) CacheTransform(r change.Resource) func(any) (any, error) {
	var rules pathRules
	for _, rule := range d.rules.forResource(r).paths {
		if !slices.ContainsFunc(keptInCache, func(k []string) bool { return slices.Equal(k, rule) }) {
			rules = append(rules, rule)
		}
	}
	return func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		slimManagedFields(u.Object)
		if m := d.redactor.redact(prune(u.Object, rules), r); m != nil {
			u.Object = m
		}
		return u, nil
	}
}

// slimManagedFields keeps each managedFields entry's manager, operation,
// time and subresource: what attribution compares between the old and new
// object. The field sets are most of an object's decoded size (~40%).
func slimManagedFields(obj map[string]any) {
	meta, _ := obj["metadata"].(map[string]any)
	entries, ok := meta["managedFields"].([]any)
	if !ok || slim(entries) {
		return // the watch decodes entries slim already
	}
	kept := make([]any, 0, len(entries))
	for _, e := range entries {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		slim := make(map[string]any, 4)
		for _, k := range managedFieldsKept {
			if v, ok := m[k]; ok {
				slim[k] = v
			}
		}
		kept = append(kept, slim)
	}
	meta["managedFields"] = kept
}

var managedFieldsKept = []string{"manager", "operation", "time", "subresource"}

// slim says whether every entry holds only what slimManagedFields keeps.
func slim(entries []any) bool {
	for _, e := range entries {
		m, ok := e.(map[string]any)
		if !ok {
			return false
		}
		for k := range m {
			if !slices.Contains(managedFieldsKept, k) {
				return false
			}
		}
	}
	return true
}

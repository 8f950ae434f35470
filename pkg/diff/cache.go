package diff

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/managedfields"
)

// keptInCache are ignored fields the watcher still needs: resourceVersion
// to resume watches and tell a new state from a repeated one, and
// managedFields (slim: see pkg/managedfields) to say who made a change.
var keptInCache = pathRules{{"metadata", "resourceVersion"}, {"metadata", "managedFields"}}

// CacheTransform returns the cache transform for r: it drops what is
// never reported before the object is cached (ignored fields, managedFields'
// field sets below their first levels) and redacts sensitive values, so that the cache is smaller,
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
		managedfields.Slim(u.Object)
		if m := d.redactor.redact(prune(u.Object, rules), r); m != nil {
			u.Object = m
		}
		return u, nil
	}
}

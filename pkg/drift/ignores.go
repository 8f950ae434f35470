package drift

import (
	"log/slog"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubediff/kubediff/pkg/record"
)

// Ignores keeps what the GitOps tools are told to ignore, read as the
// watch decodes their objects, so that kubediff never calls drift what
// the tool itself does not: Argo CD Applications' spec.ignoreDifferences
// (JSON pointers and managed-fields managers; jq path expressions are
// not supported) and Flux HelmReleases' spec.driftDetection.ignore
// (JSON pointers). What is not honoured is said once per object in the
// log; a pointer that is not one is left out. Safe for concurrent use.
type Ignores struct {
	log *slog.Logger

	mu   sync.Mutex
	apps map[string][]ignoreRule // by "Kind:namespace/name" of the Application or HelmRelease
	said map[string]bool         // the objects whose rules were logged about
}

// ignoreRule is one entry of ignoreDifferences.
type ignoreRule struct {
	group, kind, namespace, name string
	anyType                      bool // a HelmRelease's rule without a target: every object
	anyGroup                     bool // a HelmRelease's target without a group: the kind in any group
	pointers, managers           []string
}

// NewIgnores returns an empty book logging to log (nil: nowhere).
func NewIgnores(log *slog.Logger) *Ignores {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Ignores{log: log, apps: map[string][]ignoreRule{}, said: map[string]bool{}}
}

// Observe reads an Application's ignoreDifferences, or a HelmRelease's
// driftDetection.ignore.
func (a *Ignores) Observe(app *unstructured.Unstructured) {
	if a == nil {
		return
	}
	read, path := ruleOf, []string{"spec", "ignoreDifferences"}
	if app.GetKind() == "HelmRelease" {
		read, path = helmRuleOf, []string{"spec", "driftDetection", "ignore"}
	}
	list, _, _ := unstructured.NestedSlice(app.Object, path...)
	key := keyOf(app.GetKind(), app.GetNamespace(), app.GetName())
	var rules []ignoreRule
	var problems []string
	for _, item := range list {
		m, _ := item.(map[string]any)
		r, problem := read(m)
		rules = append(rules, r)
		if problem != "" {
			problems = append(problems, problem)
		}
	}
	a.mu.Lock()
	if len(rules) == 0 {
		delete(a.apps, key)
	} else {
		a.apps[key] = rules
	}
	say := len(problems) > 0 && !a.said[key] && len(a.said) < maxLogged
	if say {
		a.said[key] = true
	}
	a.mu.Unlock()
	if say {
		a.log.Warn("part of what a GitOps tool is told to ignore is not honoured: kubediff may call drift what the tool ignores",
			"kind", app.GetKind(), "namespace", app.GetNamespace(), "name", app.GetName(), "problems", strings.Join(problems, "; "))
	}
}

// ruleOf reads one ignoreDifferences entry, and what of it is not honoured.
func ruleOf(m map[string]any) (ignoreRule, string) {
	str := func(k string) string { v, _ := m[k].(string); return v }
	r := ignoreRule{group: str("group"), kind: str("kind"), namespace: str("namespace"), name: str("name")}
	r.managers, _, _ = unstructured.NestedStringSlice(m, "managedFieldsManagers")
	pointers, _, _ := unstructured.NestedStringSlice(m, "jsonPointers")
	var problems []string
	r.pointers, problems = jsonPointers(pointers)
	if jq, _, _ := unstructured.NestedStringSlice(m, "jqPathExpressions"); len(jq) > 0 {
		problems = append(problems, "jqPathExpressions are not supported")
	}
	return r, strings.Join(problems, "; ")
}

// helmRuleOf reads one driftDetection.ignore entry of a HelmRelease: its
// paths, for the objects its target selects (every one without a
// target).
func helmRuleOf(m map[string]any) (ignoreRule, string) {
	target, _, _ := unstructured.NestedStringMap(m, "target")
	r := ignoreRule{group: target["group"], kind: target["kind"], namespace: target["namespace"], name: target["name"],
		anyType: target["kind"] == "", anyGroup: target["group"] == ""}
	paths, _, _ := unstructured.NestedStringSlice(m, "paths")
	var problems []string
	r.pointers, problems = jsonPointers(paths)
	if target["labelSelector"] != "" || target["annotationSelector"] != "" {
		problems = append(problems, "targets by label or annotation selector are not supported")
		r.pointers = nil
	}
	return r, strings.Join(problems, "; ")
}

// jsonPointers are the pointers that are ones, and a problem for each
// that is not.
func jsonPointers(in []string) (pointers, problems []string) {
	for _, p := range in {
		if !strings.HasPrefix(p, "/") {
			problems = append(problems, "not a JSON pointer: "+p)
			continue
		}
		pointers = append(pointers, strings.TrimSuffix(p, "/"))
	}
	return pointers, problems
}

// keyOf is where an Application's or HelmRelease's rules are kept.
func keyOf(kind, namespace, name string) string { return kind + ":" + namespace + "/" + name }

// Forget drops a deleted Application's or HelmRelease's rules.
func (a *Ignores) Forget(kind, namespace, name string) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.apps, keyOf(kind, namespace, name))
}

// ignored says whether the Application owning rec's object ignores
// fc, a change by manager m. An Application named without its namespace
// (in Argo CD's own) is found by name when one alone has it.
func (a *Ignores) ignored(o owner, rec *record.Change, fc record.FieldChange) bool {
	if a == nil || o.tool != record.ToolArgoCD && (o.tool != record.ToolFlux || o.kind != "HelmRelease") {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range a.rulesOf(o) {
		if !r.selects(rec) {
			continue
		}
		for _, p := range r.pointers {
			if fc.Path == p || isBelow(fc.Path, p) {
				return true
			}
		}
		for _, m := range r.managers {
			if rec.Manager != nil && m == rec.Manager.Name {
				return true
			}
		}
	}
	return false
}

// rulesOf are o's rules. The caller holds mu.
func (a *Ignores) rulesOf(o owner) []ignoreRule {
	kind := "Application"
	if o.tool == record.ToolFlux {
		kind = o.kind
	}
	if o.namespace != "" {
		return a.apps[keyOf(kind, o.namespace, o.name)]
	}
	var found []ignoreRule
	n := 0
	for key, rules := range a.apps {
		if k, name, _ := strings.Cut(key, "/"); name == o.name && strings.HasPrefix(k, kind+":") {
			found, n = rules, n+1
		}
	}
	if n != 1 {
		return nil
	}
	return found
}

// selects says whether r applies to rec's object: its group and kind,
// and its name and namespace when r names them.
func (r ignoreRule) selects(rec *record.Change) bool {
	return (r.anyType || (r.anyGroup || r.group == rec.Group()) && r.kind == rec.Kind) &&
		(r.name == "" || r.name == rec.Name) && (r.namespace == "" || r.namespace == rec.Namespace)
}

// IgnoreSource says whether group/resource is a type whose objects tell
// a GitOps tool what to ignore: Argo CD's Applications, Flux's
// HelmReleases.
func IgnoreSource(group, resource string) bool {
	return group == "argoproj.io" && resource == "applications" || group == "helm.toolkit.fluxcd.io" && resource == "helmreleases"
}

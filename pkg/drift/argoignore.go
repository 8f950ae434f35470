package drift

import (
	"log/slog"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubediff/kubediff/pkg/record"
)

// ArgoIgnores keeps Argo CD Applications' spec.ignoreDifferences, read
// as the watch decodes each Application, so that kubediff never calls
// drift what Argo CD is told to ignore: JSON pointers and managed-fields
// managers. jq path expressions are not supported (said once per
// Application in the log); a pointer that is not one is left out, also
// with one log line. Safe for concurrent use.
type ArgoIgnores struct {
	log *slog.Logger

	mu   sync.Mutex
	apps map[string][]ignoreRule // by "namespace/name"
	said map[string]bool         // Applications whose rules were logged about
}

// ignoreRule is one entry of ignoreDifferences.
type ignoreRule struct {
	group, kind, namespace, name string
	pointers, managers           []string
}

// NewArgoIgnores returns an empty book logging to log (nil: nowhere).
func NewArgoIgnores(log *slog.Logger) *ArgoIgnores {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &ArgoIgnores{log: log, apps: map[string][]ignoreRule{}, said: map[string]bool{}}
}

// Observe reads an Application's ignoreDifferences.
func (a *ArgoIgnores) Observe(app *unstructured.Unstructured) {
	if a == nil {
		return
	}
	list, _, _ := unstructured.NestedSlice(app.Object, "spec", "ignoreDifferences")
	key := app.GetNamespace() + "/" + app.GetName()
	var rules []ignoreRule
	var problems []string
	for _, item := range list {
		m, _ := item.(map[string]any)
		r, problem := ruleOf(m)
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
		a.log.Warn("part of an Application's ignoreDifferences is not honoured: kubediff may call drift what Argo CD ignores",
			"namespace", app.GetNamespace(), "name", app.GetName(), "problems", strings.Join(problems, "; "))
	}
}

// ruleOf reads one ignoreDifferences entry, and what of it is not honoured.
func ruleOf(m map[string]any) (ignoreRule, string) {
	str := func(k string) string { v, _ := m[k].(string); return v }
	r := ignoreRule{group: str("group"), kind: str("kind"), namespace: str("namespace"), name: str("name")}
	r.managers, _, _ = unstructured.NestedStringSlice(m, "managedFieldsManagers")
	pointers, _, _ := unstructured.NestedStringSlice(m, "jsonPointers")
	var problems []string
	for _, p := range pointers {
		if !strings.HasPrefix(p, "/") {
			problems = append(problems, "not a JSON pointer: "+p)
			continue
		}
		r.pointers = append(r.pointers, strings.TrimSuffix(p, "/"))
	}
	if jq, _, _ := unstructured.NestedStringSlice(m, "jqPathExpressions"); len(jq) > 0 {
		problems = append(problems, "jqPathExpressions are not supported")
	}
	return r, strings.Join(problems, "; ")
}

// Forget drops a deleted Application's rules.
func (a *ArgoIgnores) Forget(namespace, name string) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.apps, namespace+"/"+name)
}

// ignored says whether the Application owning rec's object ignores
// fc, a change by manager m. An Application named without its namespace
// (in Argo CD's own) is found by name when one alone has it.
func (a *ArgoIgnores) ignored(o owner, rec *record.Change, fc record.FieldChange) bool {
	if a == nil || o.tool != record.ToolArgoCD {
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
			if m == rec.Manager.Name {
				return true
			}
		}
	}
	return false
}

// rulesOf are o's rules. The caller holds mu.
func (a *ArgoIgnores) rulesOf(o owner) []ignoreRule {
	if o.namespace != "" {
		return a.apps[o.namespace+"/"+o.name]
	}
	var found []ignoreRule
	n := 0
	for key, rules := range a.apps {
		if _, name, _ := strings.Cut(key, "/"); name == o.name {
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
	return r.group == rec.Group() && r.kind == rec.Kind &&
		(r.name == "" || r.name == rec.Name) && (r.namespace == "" || r.namespace == rec.Namespace)
}

// Application says whether group/resource is Argo CD's Applications,
// whose ignoreDifferences ArgoIgnores reads.
func Application(group, resource string) bool {
	return group == "argoproj.io" && resource == "applications"
}

package drift

import (
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kubediff/kubediff/pkg/record"
)

// Ignores keeps what the GitOps tools are told to ignore, read as the
// watch decodes their objects, so that kubediff never calls drift what
// the tool itself does not: Argo CD Applications' spec.ignoreDifferences
// and the system level's, in argocd-cm's
// resource.customizations.ignoreDifferences.<group>_<Kind> and .all
// (JSON pointers and managed-fields managers; jq path expressions are
// not supported), and Flux HelmReleases' spec.driftDetection.ignore
// (JSON pointers). What is not honoured is said once per object in the
// log; a pointer that is not one is left out. Safe for concurrent use.
type Ignores struct {
	log *slog.Logger

	mu     sync.Mutex
	apps   map[string][]ignoreRule // by "Kind:namespace/name" of the Application or HelmRelease
	system map[string][]ignoreRule // Argo CD's system level, by the namespace of its argocd-cm
	// homes are the namespaces holding an Application of each name:
	// an object names its Application without one when it is in Argo
	// CD's own namespace, whose argocd-cm then applies.
	homes map[string]map[string]bool
	said  map[string]bool // the objects whose rules were logged about
}

const (
	// argoSettings is the ConfigMap of Argo CD's settings, in the
	// namespace Argo CD runs in.
	argoSettings = "argocd-cm"
	// systemIgnorePrefix begins its keys of system-level ignore rules:
	// .all, .<group>_<Kind>, or .<Kind> for the core group.
	systemIgnorePrefix = "resource.customizations.ignoreDifferences."
)

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
	return &Ignores{log: log, apps: map[string][]ignoreRule{}, system: map[string][]ignoreRule{}, homes: map[string]map[string]bool{}, said: map[string]bool{}}
}

// Observe reads an Application's ignoreDifferences, a HelmRelease's
// driftDetection.ignore, or argocd-cm's system-level rules (any other
// ConfigMap is passed over).
func (a *Ignores) Observe(obj *unstructured.Unstructured) {
	if a == nil {
		return
	}
	var rules []ignoreRule
	var problems []string
	switch obj.GetKind() {
	case "ConfigMap":
		if obj.GetName() != argoSettings {
			return
		}
		rules, problems = systemRulesOf(obj)
	case "HelmRelease":
		rules, problems = rulesIn(obj, helmRuleOf, "spec", "driftDetection", "ignore")
	default:
		rules, problems = rulesIn(obj, ruleOf, "spec", "ignoreDifferences")
	}
	a.keep(obj, rules, problems)
}

// rulesIn reads the list of rules at path, each with read.
func rulesIn(obj *unstructured.Unstructured, read func(map[string]any) (ignoreRule, string), path ...string) (rules []ignoreRule, problems []string) {
	list, _, _ := unstructured.NestedSlice(obj.Object, path...)
	for _, item := range list {
		m, _ := item.(map[string]any)
		r, problem := read(m)
		rules = append(rules, r)
		if problem != "" {
			problems = append(problems, problem)
		}
	}
	return rules, problems
}

// keep keeps obj's rules in place of those it had, and says once what
// of them is not honoured.
func (a *Ignores) keep(obj *unstructured.Unstructured, rules []ignoreRule, problems []string) {
	key := keyOf(obj.GetKind(), obj.GetNamespace(), obj.GetName())
	book, at := a.apps, key
	if obj.GetKind() == "ConfigMap" {
		book, at = a.system, obj.GetNamespace()
	}
	a.mu.Lock()
	if obj.GetKind() == "Application" {
		if a.homes[obj.GetName()] == nil {
			a.homes[obj.GetName()] = map[string]bool{}
		}
		a.homes[obj.GetName()][obj.GetNamespace()] = true
	}
	if len(rules) == 0 {
		delete(book, at)
	} else {
		book[at] = rules
	}
	say := len(problems) > 0 && !a.said[key] && len(a.said) < maxLogged
	if say {
		a.said[key] = true
	}
	a.mu.Unlock()
	if say {
		a.log.Warn("part of what a GitOps tool is told to ignore is not honoured: kubediff may call drift what the tool ignores",
			"kind", obj.GetKind(), "namespace", obj.GetNamespace(), "name", obj.GetName(), "problems", strings.Join(problems, "; "))
	}
}

// systemRulesOf reads argocd-cm's system-level ignore rules: one per
// resource.customizations.ignoreDifferences key, whose value is YAML
// (jsonPointers, managedFieldsManagers, jqPathExpressions).
func systemRulesOf(cm *unstructured.Unstructured) (rules []ignoreRule, problems []string) {
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	keys := slices.Sorted(maps.Keys(data)) // problems in the same order each time
	for _, k := range keys {
		target, ok := strings.CutPrefix(k, systemIgnorePrefix)
		if !ok {
			continue
		}
		var spec struct {
			JSONPointers          []string `json:"jsonPointers"`
			ManagedFieldsManagers []string `json:"managedFieldsManagers"`
			JQPathExpressions     []string `json:"jqPathExpressions"`
		}
		if err := yaml.Unmarshal([]byte(data[k]), &spec); err != nil {
			problems = append(problems, k+": not YAML of ignoreDifferences: "+err.Error())
			continue
		}
		r := ignoreRule{anyType: target == "all", managers: spec.ManagedFieldsManagers}
		if group, kind, found := strings.Cut(target, "_"); found {
			r.group, r.kind = group, kind
		} else {
			r.kind = target // the core group's
		}
		var bad []string
		r.pointers, bad = jsonPointers(spec.JSONPointers)
		for _, p := range bad {
			problems = append(problems, k+": "+p)
		}
		if len(spec.JQPathExpressions) > 0 {
			problems = append(problems, k+": jqPathExpressions are not supported")
		}
		rules = append(rules, r)
	}
	return rules, problems
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

// Forget drops a deleted Application's, HelmRelease's or argocd-cm's
// rules.
func (a *Ignores) Forget(kind, namespace, name string) {
	if a == nil {
		return
	}
	if kind == "ConfigMap" && name != argoSettings {
		return // every other ConfigMap's deletion: no lock taken
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if kind == "ConfigMap" {
		delete(a.system, namespace)
		return
	}
	if kind == "Application" {
		delete(a.homes[name], namespace)
		if len(a.homes[name]) == 0 {
			delete(a.homes, name)
		}
	}
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
	for _, r := range slices.Concat(a.rulesOf(o), a.systemRulesFor(o)) {
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

// systemRulesFor are the system-level rules of the Argo CD owning o's
// object: those of the argocd-cm in its Application's namespace (for an
// object naming its Application without one, where the only Application
// of that name is). Never another namespace's: whoever may create a
// ConfigMap named argocd-cm in their own namespace must not hide drift
// elsewhere. The caller holds mu.
func (a *Ignores) systemRulesFor(o owner) []ignoreRule {
	if o.tool != record.ToolArgoCD {
		return nil
	}
	namespace := o.namespace
	if namespace == "" {
		if len(a.homes[o.name]) != 1 {
			return nil
		}
		for home := range a.homes[o.name] {
			namespace = home
		}
	}
	return a.system[namespace]
}

// selects says whether r applies to rec's object: its group and kind,
// and its name and namespace when r names them.
func (r ignoreRule) selects(rec *record.Change) bool {
	return (r.anyType || (r.anyGroup || r.group == rec.Group()) && r.kind == rec.Kind) &&
		(r.name == "" || r.name == rec.Name) && (r.namespace == "" || r.namespace == rec.Namespace)
}

// IgnoreSource says whether group/resource is a type whose objects tell
// a GitOps tool what to ignore: Argo CD's Applications and ConfigMaps
// (argocd-cm, Observe passes over the others), Flux's HelmReleases.
func IgnoreSource(group, resource string) bool {
	return group == "argoproj.io" && resource == "applications" || group == "helm.toolkit.fluxcd.io" && resource == "helmreleases" ||
		group == "" && resource == "configmaps"
}

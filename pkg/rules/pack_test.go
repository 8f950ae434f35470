package rules

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kubediff/kubediff/pkg/change"
)

func object(t *testing.T, text string) *unstructured.Unstructured {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(text), &obj); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// The RBAC rules read record.rbac, what the access sentences say.
func TestPackRBACRulesReadWhatAccessChanged(t *testing.T) {
	set, err := Compile(nil, PackNamed("rbac-admin-binding", "rbac-dangerous-access"))
	if err != nil {
		t.Fatal(err)
	}
	roles := schemaResource("rbac.authorization.k8s.io", "v1", "roles", "Role")
	bindings := schemaResource("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding")
	reader := func(resources string) *unstructured.Unstructured {
		return object(t, `{apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: reader, namespace: dev, resourceVersion: "1"},
rules: [{apiGroups: [""], resources: [`+resources+`], verbs: [get, list]}]}`)
	}
	binding := func(role, user string) *unstructured.Unstructured {
		return object(t, `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRoleBinding, metadata: {name: x, resourceVersion: "1"},
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: `+role+`}, subjects: [{kind: User, name: `+user+`}]}`)
	}
	for _, tc := range []struct {
		name   string
		ev     change.Event
		rules  []string
		access string
	}{
		{"a Role gains secrets", change.Event{Type: change.Updated, Resource: roles, Old: reader("configmaps"), New: reader("configmaps, secrets")},
			[]string{"rbac-dangerous-access"}, "Role dev/reader now grants get, list on secrets in dev"},
		{"a Role gains pods", change.Event{Type: change.Updated, Resource: roles, Old: reader("configmaps"), New: reader("configmaps, pods")}, nil, ""},
		{"a Role loses secrets", change.Event{Type: change.Updated, Resource: roles, Old: reader("secrets"), New: reader("pods")}, nil, ""},
		{"a Role made with a wildcard", change.Event{Type: change.Added, Resource: roles, New: reader(`"*"`)},
			[]string{"rbac-dangerous-access"}, "now grants get, list on every resource in dev"},
		{"cluster-admin bound", change.Event{Type: change.Added, Resource: bindings, New: binding("cluster-admin", "alice")},
			[]string{"rbac-admin-binding"}, "alice gains cluster-admin through ClusterRoleBinding x"},
		{"view bound", change.Event{Type: change.Added, Resource: bindings, New: binding("view", "alice")}, nil, ""},
		{"cluster-admin unbound", change.Event{Type: change.Deleted, Resource: bindings, Old: binding("cluster-admin", "alice")}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, v := judged(t, set, tc.ev)
			if want := map[string]string{"cluster-admin bound": "ClusterRoleBinding x binds someone new to cluster-admin",
				"a Role gains secrets": "Role dev/reader now grants a wildcard, escalation, secrets or pods/exec"}[tc.name]; v.Summary != want && want != "" {
				t.Errorf("summary %q, want %q", v.Summary, want)
			}
			if !slices.Equal(v.Rules, tc.rules) || !strings.Contains(strings.Join(c.Access, "\n"), tc.access) || (tc.rules != nil && v.Summary == "") {
				t.Errorf("verdict %+v (access %q), want rules %v with a summary, access saying %q", v, c.Access, tc.rules, tc.access)
			}
		})
	}
}

// A pack rule given namespaces matches only records in them, and never
// a cluster-scoped object's.
func TestPackRuleLimitedToNamespaces(t *testing.T) {
	var entries []PackEntry
	if err := json.Unmarshal([]byte(`["node-cordoned", {"name": "configmap-deleted", "namespaces": ["prod-*"], "severity": "critical"}]`), &entries); err != nil {
		t.Fatal(err)
	}
	set, err := Compile(nil, entries)
	if err != nil {
		t.Fatal(err)
	}
	configMaps := schemaResource("", "v1", "configmaps", "ConfigMap")
	cm := func(ns string) *unstructured.Unstructured {
		return object(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: app, namespace: `+ns+`, resourceVersion: "1"}, data: {k: v}}`)
	}
	for ns, want := range map[string][]string{"prod-eu": {"configmap-deleted"}, "dev": nil} {
		if _, v := judged(t, set, change.Event{Type: change.Deleted, Resource: configMaps, Old: cm(ns)}); !slices.Equal(v.Rules, want) ||
			(want != nil && v.Severity != Critical) {
			t.Errorf("a ConfigMap deleted in %s: verdict %+v, want rules %v, critical", ns, v, want)
		}
	}
	if err := json.Unmarshal([]byte(`[{"name": "crd-deleted", "namespace": ["x"]}]`), &entries); err == nil || !strings.Contains(err.Error(), `unknown field "namespace"`) {
		t.Errorf("a misspelt key: %v", err)
	}
	if _, err := Compile(nil, []PackEntry{{Name: "crd-deleted", Namespaces: []string{"[bad"}}}); err == nil ||
		!strings.HasPrefix(err.Error(), "rulePack[crd-deleted].namespaces: ") {
		t.Errorf("a bad glob: %v", err)
	}
}

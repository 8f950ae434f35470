package rules

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/record"
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

// Deleting a namespace is one alert, the namespace's: the objects that
// go with it (record.namespaceDeleting) match no deletion rule of the
// pack, while one deleted on its own in a live namespace still does.
func TestPackNamespaceDeletionIsOneAlert(t *testing.T) {
	deletions := []string{"secret-deleted", "configmap-deleted", "workload-deleted", "networkpolicy-deleted"}
	set, err := Compile(nil, PackNamed(append([]string{"namespace-deleted"}, deletions...)...))
	if err != nil {
		t.Fatal(err)
	}
	namespaces := change.Resource{GVR: schemaResource("", "v1", "namespaces", "Namespace").GVR, Kind: "Namespace"}
	ns := func(rv, deleted string) *unstructured.Unstructured {
		u := object(t, `{apiVersion: v1, kind: Namespace, metadata: {name: shop, uid: ns, resourceVersion: "`+rv+`"}, status: {phase: Active}}`)
		if deleted != "" {
			u.Object["metadata"].(map[string]any)["deletionTimestamp"] = deleted
			u.Object["status"] = map[string]any{"phase": "Terminating"}
		}
		return u
	}
	inShop := func(kind, apiVersion string) *unstructured.Unstructured {
		return object(t, `{apiVersion: `+apiVersion+`, kind: `+kind+`, metadata: {name: x, namespace: shop, uid: x, resourceVersion: "5"}}`)
	}
	objects := []change.Event{
		{Type: change.Deleted, Resource: schemaResource("", "v1", "secrets", "Secret"), Old: inShop("Secret", "v1")},
		{Type: change.Deleted, Resource: schemaResource("", "v1", "configmaps", "ConfigMap"), Old: inShop("ConfigMap", "v1")},
		{Type: change.Deleted, Resource: schemaResource("apps", "v1", "deployments", "Deployment"), Old: inShop("Deployment", "apps/v1")},
		{Type: change.Deleted, Resource: schemaResource("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy"), Old: inShop("NetworkPolicy", "networking.k8s.io/v1")},
	}
	for i, ev := range objects {
		if _, v := judged(t, set, ev); !slices.Equal(v.Rules, deletions[i:i+1]) {
			t.Errorf("%s deleted on its own: rules %v, want %s", ev.Resource.Kind, v.Rules, deletions[i])
		}
		withNamespace := func(c *record.Change) { c.NamespaceDeleting = true }
		if _, v := judgedAs(t, set, ev, withNamespace); len(v.Rules) != 0 {
			t.Errorf("%s deleted with its namespace: rules %v, want none", ev.Resource.Kind, v.Rules)
		}
	}
	for _, tc := range []struct {
		name string
		ev   change.Event
		want []string
	}{
		{"its deletion begins", change.Event{Type: change.Updated, Resource: namespaces, Old: ns("1", ""), New: ns("2", "2026-11-26T10:00:00Z")}, []string{"namespace-deleted"}},
		{"it is gone, its deletion seen begin", change.Event{Type: change.Deleted, Resource: namespaces, Old: ns("2", "2026-11-26T10:00:00Z")}, nil},
		{"it is gone, its deletion not seen begin", change.Event{Type: change.Deleted, Resource: namespaces, Old: ns("1", "")}, []string{"namespace-deleted"}},
		{"it is labelled", change.Event{Type: change.Updated, Resource: namespaces, Old: ns("1", ""), New: object(t, `{apiVersion: v1, kind: Namespace, metadata: {name: shop, uid: ns, resourceVersion: "2", labels: {a: b}}, status: {phase: Active}}`)}, nil},
	} {
		if _, v := judged(t, set, tc.ev); !slices.Equal(v.Rules, tc.want) || (tc.want != nil && v.Summary != "Namespace shop deleted, and every object in it") {
			t.Errorf("a Namespace %s: verdict %+v, want rules %v with the summary", tc.name, v, tc.want)
		}
	}
}

// The drift rules match a change made outside the object's GitOps owner
// (record.gitops.via outside), never the owner's own write nor the one
// that puts the drift back, nor a change of an object no GitOps tool
// owns; drift-in-namespace only in the namespaces it is given, which it
// requires. The summary names the owner and the drifted fields.
func TestPackDriftRulesMatchOutsideChanges(t *testing.T) {
	var entries []PackEntry
	if err := json.Unmarshal([]byte(`["drift-outside-gitops", {"name": "drift-in-namespace", "namespaces": ["prod-*"]}]`), &entries); err != nil {
		t.Fatal(err)
	}
	set, err := Compile(nil, entries)
	if err != nil {
		t.Fatal(err)
	}
	deployments := schemaResource("apps", "v1", "deployments", "Deployment")
	web := func(ns string, replicas int) *unstructured.Unstructured {
		return object(t, `{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: `+ns+`, resourceVersion: "1"}, spec: {replicas: `+strconv.Itoa(replicas)+`}}`)
	}
	owner := record.GitOps{Tool: record.ToolArgoCD, Kind: "Application", Namespace: "argocd", Name: "shop"}
	outside, sync, putBack := owner, owner, owner
	outside.Via, outside.Drift = record.ViaOutside, []record.DriftedField{{Path: "/spec/replicas", Field: "spec.replicas", Declared: int64(2), Before: int64(2), Now: int64(5)}}
	sync.Via = record.ViaSync
	putBack.Via, putBack.Reverts, putBack.DriftSeconds = record.ViaSync, "u/1/updated", 2.4
	for _, tc := range []struct {
		name   string
		ns     string
		gitops *record.GitOps
		want   []string
	}{
		{"outside, in prod", "prod-eu", &outside, []string{"drift-in-namespace", "drift-outside-gitops"}},
		{"outside, in dev", "dev", &outside, []string{"drift-outside-gitops"}},
		{"the owner's sync", "prod-eu", &sync, nil},
		{"the sync that puts it back", "prod-eu", &putBack, nil},
		{"no GitOps owner", "prod-eu", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := change.Event{Type: change.Updated, Resource: deployments, Old: web(tc.ns, 2), New: web(tc.ns, 5)}
			_, v := judgedAs(t, set, ev, func(c *record.Change) { c.GitOps = tc.gitops })
			rules := slices.Sorted(slices.Values(v.Rules))
			if !slices.Equal(rules, tc.want) {
				t.Errorf("rules %v, want %v", rules, tc.want)
			}
			if want := "Deployment " + tc.ns + "/web changed outside argocd Application argocd/shop: spec.replicas"; tc.want != nil && v.Summary != want {
				t.Errorf("summary %q, want %q", v.Summary, want)
			}
		})
	}
	if _, err := Compile(nil, PackNamed("drift-in-namespace")); err == nil || !strings.Contains(err.Error(), "drift-in-namespace needs the namespaces it is about") {
		t.Errorf("drift-in-namespace without namespaces: %v", err)
	}
}

package diff

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/change"
)

var (
	roles               = change.Resource{GVR: schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}, Kind: "Role", Namespaced: true}
	clusterRoleBindings = change.Resource{GVR: schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}, Kind: "ClusterRoleBinding"}
)

const (
	readerRole = `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"reader","namespace":"dev","uid":"r-1","resourceVersion":"%s"},
 "rules":[{"apiGroups":[""],"resources":%s,"verbs":["get","list","watch"]}]}`
	adminBinding = `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"x","uid":"b-1","resourceVersion":"7"},
 "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},
 "subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"alice"}]}`
)

// The record of an RBAC change says what access it gave or took away,
// whatever kind of change it is; other kinds' records say nothing of it.
func TestDiffSaysWhatAccessChanged(t *testing.T) {
	d, err := New(Options{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		ev   change.Event
		want []string
	}{
		{"a binding created", change.Event{Type: change.Added, Resource: clusterRoleBindings, New: obj(t, adminBinding)},
			[]string{"alice gains cluster-admin through ClusterRoleBinding x"}},
		{"a binding deleted after a gap", change.Event{Type: change.Deleted, Resource: clusterRoleBindings, Old: obj(t, adminBinding), FinalStateUnknown: true},
			[]string{"alice loses cluster-admin through ClusterRoleBinding x"}},
		{"a Role gaining secrets", change.Event{Type: change.Updated, Resource: roles,
			Old: obj(t, sprintf(readerRole, "1", `["configmaps"]`)), New: obj(t, sprintf(readerRole, "2", `["configmaps","secrets"]`))},
			[]string{"Role dev/reader now grants get, list, watch on secrets in dev"}},
		{"a Role's resources reordered", change.Event{Type: change.Updated, Resource: roles,
			Old: obj(t, sprintf(readerRole, "1", `["configmaps","secrets"]`)), New: obj(t, sprintf(readerRole, "2", `["secrets","configmaps"]`))}, nil},
		{"a ConfigMap", update(t, cm(t, "1", 1, "x", "kubectl", `{"k":"v1"}`), cm(t, "2", 1, "x", "kubectl", `{"k":"v2"}`)), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := d.Diff(tt.ev)
			if !ok {
				t.Fatal("no record")
			}
			if !slices.Equal(c.Access, tt.want) {
				t.Errorf("access %q, want %q", c.Access, tt.want)
			}
		})
	}
}

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// namedNamespace creates a namespace and deletes it after the test.
func namedNamespace(t *testing.T, name string) {
	t.Helper()
	if _, err := clients.CoreV1().Namespaces().Create(bg, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = clients.CoreV1().Namespaces().Delete(bg, name, metav1.DeleteOptions{}) })
}

func createConfigMap(t *testing.T, ns, name string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": "0"}}
	if _, err := clients.CoreV1().ConfigMaps(ns).Create(bg, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func setConfigMap(t *testing.T, ns, name, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"data":{"v":%q}}`, value)
	if _, err := clients.CoreV1().ConfigMaps(ns).Patch(bg, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestNamespaceGlobOverManyNamespaces: `-n 'team-*'` matching more
// namespaces than are watched one by one is one watch per type, reports
// changes in the matched namespaces (one created after the start too) and
// none in the excluded one or the others; a user granted the namespaces
// one by one (a RoleBinding each, no cluster-wide right) gets a watch per
// namespace instead.
func TestNamespaceGlobOverManyNamespaces(t *testing.T) {
	prefix := fmt.Sprintf("glob%d", time.Now().UnixNano()%100000)
	var matched []string
	for i := range 12 {
		ns := fmt.Sprintf("%s-%d", prefix, i)
		namedNamespace(t, ns)
		createConfigMap(t, ns, "settings")
		matched = append(matched, ns)
	}
	other := prefix + "x-other"
	namedNamespace(t, other)
	createConfigMap(t, other, "settings")
	excluded := prefix + "-3"
	args := []string{"--resources", "configmaps", "-n", prefix + "-*", "--exclude-namespace", excluded}

	w := startWatch(t, args...)
	w.logOnFailure()
	if !strings.Contains(w.stderr.String(), "types=1 watches=1 ") {
		t.Errorf("as a cluster admin: want one cluster-wide watch for ConfigMaps")
	}
	later := prefix + "-later"
	namedNamespace(t, later)
	createConfigMap(t, later, "settings")
	for _, ns := range []string{matched[0], matched[11], excluded, other, later} {
		setConfigMap(t, ns, "settings", "1")
	}
	w.waitRecords("ConfigMap", matched[0], "settings", 1)
	w.waitRecords("ConfigMap", matched[11], "settings", 1)
	w.waitRecords("ConfigMap", later, "settings", 2) // added, then updated
	for _, ns := range []string{excluded, other} {
		if got := w.recordsFor("ConfigMap", ns, "settings"); len(got) != 0 {
			t.Errorf("reported %d changes in %s, outside the glob or excluded", len(got), ns)
		}
	}
	w.shutdown()

	granted := slices.DeleteFunc(slices.Clone(matched), func(ns string) bool { return ns == excluded })
	reads := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}
	kubeconfig := serviceAccountKubeconfig(t, matched[0], "globreader", reads, granted...)
	grantNamespaceList(t, matched[0], "globreader")
	r := startWatchAs(t, kubeconfig, args...)
	r.logOnFailure()
	if want := fmt.Sprintf("types=1 watches=%d ", len(granted)); !strings.Contains(r.stderr.String(), want) {
		t.Errorf("granted namespace by namespace: want %s", want)
	}
	setConfigMap(t, matched[5], "settings", "2")
	r.waitRecords("ConfigMap", matched[5], "settings", 1)
}

// grantNamespaceList lets a ServiceAccount list namespaces, which
// namespace globs need.
func grantNamespaceList(t *testing.T, ns, name string) {
	t.Helper()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name + "-namespaces"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"list"}}}}
	if _, err := clients.RbacV1().ClusterRoles().Create(bg, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: role.ObjectMeta,
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}}}
	if _, err := clients.RbacV1().ClusterRoleBindings().Create(bg, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = clients.RbacV1().ClusterRoleBindings().Delete(bg, binding.Name, metav1.DeleteOptions{})
		_ = clients.RbacV1().ClusterRoles().Delete(bg, role.Name, metav1.DeleteOptions{})
	})
}

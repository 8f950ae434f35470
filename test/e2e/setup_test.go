package e2e

import (
	"path/filepath"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubediff/kubediff/internal/testenv"
	"github.com/kubediff/kubediff/pkg/history/apiservice"
)

// stateDirWithOneRecord runs kubediff on a new namespace until it has
// kept one ConfigMap's creation, stops it, and returns the namespace and
// the state dir, for the commands that read a state dir.
func stateDirWithOneRecord(t *testing.T) (ns, dir string) {
	t.Helper()
	ns = newNamespace(t)
	dir = filepath.Join(t.TempDir(), "state")
	w := startBinary(t, "watch", "-n", ns, "--state-dir", dir)
	createConfigMap(t, ns, "settings")
	w.waitRecords("ConfigMap", ns, "settings", 1)
	stopWith(t, w, syscall.SIGTERM)
	return ns, dir
}

// startBeta starts a second cluster (its own API server and etcd) with
// namespace ns in it too, and returns it with its REST config and clients.
func startBeta(t *testing.T, ns string) (*testenv.APIServer, *rest.Config, kubernetes.Interface) {
	t.Helper()
	beta, err := env.StartAnotherCluster()
	if err != nil {
		t.Fatal(err)
	}
	betaRest, err := clientcmd.BuildConfigFromFlags("", beta.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	betaClients := kubernetes.NewForConfigOrDie(betaRest)
	if _, err := betaClients.CoreV1().Namespaces().Create(bg, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return beta, betaRest, betaClients
}

// grantHistoryAccess lets user call the aggregated API (the API server's
// own check) and readers, a user or a group, list ConfigMaps in ns
// (kubediff's check of each record).
func grantHistoryAccess(t *testing.T, ns, user string, readers rbacv1.Subject) {
	t.Helper()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user + "-history"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{apiservice.Group}, Resources: []string{"*"}, Verbs: []string{"get", "list"}}}}
	if _, err := clients.RbacV1().ClusterRoles().Create(bg, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: role.ObjectMeta,
		Subjects: []rbacv1.Subject{{Kind: "User", Name: user, APIGroup: "rbac.authorization.k8s.io"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name}}
	if _, err := clients.RbacV1().ClusterRoleBindings().Create(bg, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = clients.RbacV1().ClusterRoleBindings().Delete(bg, binding.Name, metav1.DeleteOptions{})
		_ = clients.RbacV1().ClusterRoles().Delete(bg, role.Name, metav1.DeleteOptions{})
	})
	reads := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: readers.Name + "-reads"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}}}}
	if _, err := clients.RbacV1().Roles(ns).Create(bg, reads, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	readsBinding := &rbacv1.RoleBinding{ObjectMeta: reads.ObjectMeta, Subjects: []rbacv1.Subject{readers},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: reads.Name}}
	if _, err := clients.RbacV1().RoleBindings(ns).Create(bg, readsBinding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

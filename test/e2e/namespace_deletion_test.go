package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubediff/kubediff/pkg/record"
)

// namespaceDeletionConfig enables the namespace's rule and the deletion
// rules a namespace's objects would set off.
const namespaceDeletionConfig = `
rulePack: [namespace-deleted, secret-deleted, configmap-deleted, workload-deleted, networkpolicy-deleted]
`

// TestNamespaceDeletionIsOneAlert deletes a namespace holding Secrets
// and ConfigMaps and checks that only namespace-deleted fires: every
// object's deletion is still printed, marked namespaceDeleting, and
// names no rule; a Secret deleted on its own in a live namespace still
// sets off secret-deleted.
//
// The test control plane runs no kube-controller-manager, so the test
// does the namespace controller's part: once the namespace is
// terminating (the API server set its deletionTimestamp and phase, and
// the controller's informer, like kubediff's, has seen it), it deletes
// each type's objects with a DeleteCollection, then finalizes the
// namespace, which removes it.
func TestNamespaceDeletionIsOneAlert(t *testing.T) {
	ctx := context.Background()
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(namespaceDeletionConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	gone, live := newNamespace(t), newNamespace(t)
	w := startBinary(t, "watch", "--config", cfg)
	w.logOnFailure()
	for i := range 3 {
		kubectl(t, "", "-n", gone, "create", "secret", "generic", fmt.Sprint("db-", i), "--from-literal=password=hunter2")
		kubectl(t, "", "-n", gone, "create", "configmap", fmt.Sprint("app-", i), "--from-literal=mode=on")
	}
	kubectl(t, "", "-n", live, "create", "secret", "generic", "db", "--from-literal=password=hunter2")
	w.waitRecords("ConfigMap", gone, "app-2", 1)

	kubectl(t, "", "delete", "namespace", gone, "--wait=false")
	w.waitRecords("Namespace", "", gone, 1) // terminating
	for _, del := range []func(context.Context, metav1.DeleteOptions, metav1.ListOptions) error{
		clients.CoreV1().Secrets(gone).DeleteCollection, clients.CoreV1().ConfigMaps(gone).DeleteCollection,
	} {
		if err := del(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	finalize(t, gone)
	kubectl(t, "", "-n", live, "delete", "secret", "db")

	kubectl(t, "", "-n", live, "create", "configmap", "marker")
	w.waitRecords("ConfigMap", live, "marker", 1)
	w.waitRecords("Namespace", "", gone, 2) // and its deletion
	checkWentWithNamespace(t, w, gone)
	if got := w.recordsFor("Secret", live, "db"); !slices.ContainsFunc(got, func(c record.Change) bool {
		return c.Type == record.Deleted && !c.NamespaceDeleting && slices.Equal(c.Rules, []string{"secret-deleted"})
	}) {
		t.Errorf("a Secret deleted in a live namespace: want a record naming secret-deleted; its records: %s", describeRecords(got))
	}
}

// checkWentWithNamespace checks that each Secret and ConfigMap of ns has
// a deletion record marked namespaceDeleting that names no rule, and that
// of the Namespace's records exactly one names namespace-deleted.
func checkWentWithNamespace(t *testing.T, w *run, ns string) {
	t.Helper()
	for i := range 3 {
		for _, kind := range []string{"Secret", "ConfigMap"} {
			name := map[string]string{"Secret": "db-", "ConfigMap": "app-"}[kind] + fmt.Sprint(i)
			got := w.waitRecords(kind, ns, name, 2)
			if !slices.ContainsFunc(got, func(c record.Change) bool { return c.Type == record.Deleted && c.NamespaceDeleting && c.Rules == nil }) {
				t.Errorf("%s %s/%s: want a deletion marked namespaceDeleting naming no rule; its records: %s", kind, ns, name, describeRecords(got))
			}
		}
	}
	var named []record.Change
	for _, c := range w.recordsFor("Namespace", "", ns) {
		if len(c.Rules) > 0 {
			named = append(named, c)
		}
	}
	if len(named) != 1 || !slices.Equal(named[0].Rules, []string{"namespace-deleted"}) || named[0].Summary != "Namespace "+ns+" deleted, and every object in it" {
		t.Errorf("Namespace %s: want one record naming namespace-deleted, with its summary; those naming rules: %s", ns, describeRecords(named))
	}
}

// finalize does the namespace controller's last step: with the namespace
// empty, it clears the namespace's finalizers, and the API server
// removes it.
func finalize(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns, err := clients.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Spec.Finalizers = []corev1.FinalizerName{}
	if _, err := clients.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

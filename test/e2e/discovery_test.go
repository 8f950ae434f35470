package e2e

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// TestCRDInstalledWhileRunning: a CRD applied while kubediff runs is
// watched within seconds; an object created a second after the CRD is
// reported as added, with every later write (it used to be swallowed as
// part of the type's first list); deleting the CRD stops its watch
// without an error loop.
func TestCRDInstalledWhileRunning(t *testing.T) {
	ns := newNamespace(t)
	w := startWatch(t, "-n", ns)

	crd := installWidgetCRD(t) // returns once Established and discoverable
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v1", Resource: "widgets"}
	widgets := dynamic.NewForConfigOrDie(env.Config).Resource(gvr).Namespace(ns)
	widget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": crd.Spec.Group + "/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "early"}, "spec": map[string]any{"size": int64(0)},
	}}
	time.Sleep(time.Second) // a second after the CRD: the scenario, not a wait for kubediff
	created, err := widgets.Create(bg, widget, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rvs := []string{created.GetResourceVersion()}
	for size := int64(1); size <= 5; size++ {
		time.Sleep(time.Second) // a write a second, as an operator might
		_ = unstructured.SetNestedField(created.Object, size, "spec", "size")
		if created, err = widgets.Update(bg, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		rvs = append(rvs, created.GetResourceVersion())
	}
	got := w.waitRecords("Widget", ns, "early", len(rvs))
	var summary []string
	for i, r := range got {
		summary = append(summary, r.Type+" "+r.ResourceVersion)
		if i < len(rvs) && r.ResourceVersion != rvs[i] {
			t.Errorf("record %d is %s %s, want resourceVersion %s", i, r.Type, r.ResourceVersion, rvs[i])
		}
	}
	if len(got) != len(rvs) || got[0].Type != "added" {
		t.Fatalf("records %v, want the creation as added and 5 updates, resourceVersions %v", summary, rvs)
	}

	// Deleting the CRD deletes its objects (reported once each) and stops
	// its watch.
	ext := apiextensionsclient.NewForConfigOrDie(env.Config).ApiextensionsV1().CustomResourceDefinitions()
	if err := ext.Delete(bg, crd.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Widget watch to stop", func() bool {
		return strings.Contains(w.stderr.String(), "msg=\"stopped watching\" resource=widgets."+crd.Spec.Group)
	})
	deleted := 0
	for _, r := range w.recordsFor("Widget", ns, "early") {
		if r.Type == "deleted" {
			deleted++
		}
	}
	if deleted != 1 {
		t.Errorf("Widget deletion reported %d times, want once:\n%s", deleted, w.stdout.String())
	}
	// Watch the logs for 10 s: a stopped watch must not retry.
	stopped := len(w.stderr.String())
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		if after := w.stderr.String()[stopped:]; strings.Contains(after, "widgets") {
			t.Fatalf("log lines about widgets after its watch stopped:\n%s", after)
		}
	}
}

// TestNamespacedRolesOnly: a user that may read only ConfigMaps in two
// namespaces watches them, warns once per forbidden type, and reports
// changes there.
func TestNamespacedRolesOnly(t *testing.T) {
	nsA, nsB := newNamespace(t), newNamespace(t)
	user := fmt.Sprintf("limited-%d", time.Now().UnixNano()%100000)
	for _, ns := range []string{nsA, nsB} {
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "read-configmaps"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}}}
		if _, err := clients.RbacV1().Roles(ns).Create(bg, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "kubediff"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "read-configmaps"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: user}}}
		if _, err := clients.RbacV1().RoleBindings(ns).Create(bg, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	kubeconfig, err := env.AddUser(user)
	if err != nil {
		t.Fatal(err)
	}
	w := startWatchAs(t, kubeconfig, "-n", nsA, "-n", nsB)

	for _, ns := range []string{nsA, nsB} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"k": "v1"}}
		if _, err := clients.CoreV1().ConfigMaps(ns).Create(bg, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		w.waitRecords("ConfigMap", ns, "settings", 1)
	}
	// 30 s of running: forbidden types are warned about once, not retried.
	end := time.Now().Add(30 * time.Second)
	for time.Now().Before(end) {
		if n := strings.Count(w.stderr.String(), "level=ERROR"); n > 0 {
			t.Fatalf("errors in the log:\n%s", w.stderr.String())
		}
		time.Sleep(500 * time.Millisecond)
	}
	warnings := regexp.MustCompile(`msg="not watching a type kubediff may not read" resource=(\S+)`).FindAllStringSubmatch(w.stderr.String(), -1)
	seen := map[string]int{}
	for _, m := range warnings {
		seen[m[1]]++
	}
	for typ, n := range seen {
		if n > 1 {
			t.Errorf("%s warned %d times", typ, n)
		}
	}
	if seen["secrets"] != 1 || seen["configmaps"] != 0 {
		t.Errorf("forbidden warnings = %v; want secrets once and configmaps not at all", seen)
	}
	if strings.Contains(w.stderr.String(), "list/watch failed") {
		t.Errorf("a forbidden type was watched:\n%s", w.stderr.String())
	}
}

// TestLabelSelectorFiltersOnTheServer: objects the selector excludes are
// never cached (the cache size is in the "watching" log line).
func TestLabelSelectorFiltersOnTheServer(t *testing.T) {
	ns := newNamespace(t)
	for i := range 25 {
		labels := map[string]string{}
		if i < 5 {
			labels["keep"] = "yes"
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Labels: labels}}
		if _, err := clients.CoreV1().ConfigMaps(ns).Create(bg, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w := startWatch(t, "-n", ns, "--resources", "configmaps", "-l", "keep=yes")
	m := regexp.MustCompile(`msg=watching .*objects=(\d+)`).FindStringSubmatch(w.stderr.String())
	if m == nil {
		t.Fatalf("no watching line:\n%s", w.stderr.String())
	}
	// 5 labelled ConfigMaps; kube-root-ca.crt and the 20 others are not.
	if n, _ := strconv.Atoi(m[1]); n != 5 {
		t.Fatalf("cached %d objects, want the 5 the selector keeps", n)
	}
	for _, name := range []string{"cm-1", "cm-20"} {
		if _, err := clients.CoreV1().ConfigMaps(ns).Patch(bg, name, "application/merge-patch+json", []byte(`{"data":{"x":"y"}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w.waitRecords("ConfigMap", ns, "cm-1", 1)
	if got := w.recordsFor("ConfigMap", ns, "cm-20"); len(got) != 0 {
		t.Fatalf("cm-20 is excluded by the selector but was reported: %+v", got)
	}
}

// TestAccessGrantedLaterIsPickedUp: a type forbidden at start is watched
// once a RoleBinding grants it, at the next rediscovery.
func TestAccessGrantedLaterIsPickedUp(t *testing.T) {
	ns := newNamespace(t)
	user := fmt.Sprintf("later-%d", time.Now().UnixNano()%100000)
	kubeconfig, err := env.AddUser(user)
	if err != nil {
		t.Fatal(err)
	}
	w := startWatchAs(t, kubeconfig, "-n", ns, "--resources", "configmaps", "--rediscovery-interval", "2s")
	if !strings.Contains(w.stderr.String(), `msg="not watching a type kubediff may not read" resource=configmaps`) {
		t.Fatalf("configmaps should start forbidden:\n%s", w.stderr.String())
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "read-configmaps"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "later"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "read-configmaps"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: user}}}
	if _, err := clients.RbacV1().Roles(ns).Create(bg, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := clients.RbacV1().RoleBindings(ns).Create(bg, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "access to be picked up", func() bool {
		return strings.Contains(w.stderr.String(), `msg="access granted: now watching" resource=configmaps`)
	})
	// The watch may still be listing: change until a record arrives.
	eventually(t, "a ConfigMap change to be reported", func() bool {
		name := fmt.Sprintf("cm-%d", time.Now().UnixNano()%1000000)
		if _, err := clients.CoreV1().ConfigMaps(ns).Create(bg, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		return len(w.recordsFor("ConfigMap", ns, name)) > 0
	})
}

// TestNamespaceMatchedWhileRunningReportsWhatItHolds: with a namespace
// glob, a namespace created while kubediff runs is watched from the next
// rediscovery; a ConfigMap created in it before then is reported as
// added, and its update too (it used to be swallowed as part of the new
// watch's first list).
func TestNamespaceMatchedWhileRunningReportsWhatItHolds(t *testing.T) {
	prefix := fmt.Sprintf("glob%d", time.Now().UnixNano()%100000)
	w := startWatch(t, "-n", prefix+"-*", "--rediscovery-interval", "5s")
	ns := prefix + "-late"
	ensureNamespace(t, ns)
	t.Cleanup(func() { _ = clients.CoreV1().Namespaces().Delete(bg, ns, metav1.DeleteOptions{}) })
	cms := clients.CoreV1().ConfigMaps(ns)
	cm, err := cms.Create(bg, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "early"}, Data: map[string]string{"k": "1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["k"] = "2"
	if _, err := cms.Update(bg, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := w.waitRecords("ConfigMap", ns, "early", 1)
	if got[0].Type != "added" {
		t.Fatalf("first record %s, want the ConfigMap reported as added: %s", got[0].Type, w.stdout.String())
	}
}

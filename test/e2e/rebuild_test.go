package e2e

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubediff/kubediff/pkg/record"
)

// TestClusterRebuiltUnderARunningKubediff: kubediff watches through a
// second API server, which is stopped and started again on an empty etcd
// (a cluster rebuilt behind the same address), whose resourceVersions
// start lower than the old cluster's, or already past them (only the
// cluster's identity then tells the two apart: kubediff's watches resume
// as if nothing happened). kubediff says so once, reports the objects
// that vanished as deleted, and reports every object created in the new
// cluster — a name reused by another object as a deletion and an
// addition, never as an update of the old one.
func TestClusterRebuiltUnderARunningKubediff(t *testing.T) {
	t.Run("resourceVersions lower", func(t *testing.T) { rebuildUnderKubediff(t, false) })
	t.Run("resourceVersions past the old ones", func(t *testing.T) { rebuildUnderKubediff(t, true) })
}

func rebuildUnderKubediff(t *testing.T, bump bool) {
	ns := newNamespace(t)
	for i := range 5 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("before-%d", i)}, Data: map[string]string{"v": "old"}}
		if _, err := clients.CoreV1().ConfigMaps(ns).Create(bg, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	second, err := env.StartSecondAPIServer()
	if err != nil {
		t.Fatal(err)
	}
	// Stopped when the test ends: its watch caches follow every write.
	t.Cleanup(func() { _ = second.Kill() })
	second.LogOnFailure(t)
	w := startBinaryWithEnv(t, []string{"KUBECONFIG=" + second.Kubeconfig}, "watch", "-n", ns)
	w.logOnFailure()

	empty, err := env.StartEtcd()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(empty.Stop)
	if bump {
		list, err := clients.CoreV1().Namespaces().List(bg, metav1.ListOptions{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		old, _ := strconv.ParseInt(list.ResourceVersion, 10, 64)
		if err := empty.BumpRevision(old); err != nil {
			t.Fatal(err)
		}
	}
	if err := second.Kill(); err != nil {
		t.Fatal(err)
	}
	second.UseEtcd(empty.URL)
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	rebuilt := clientFor(t, second.Kubeconfig)
	oldID := kubeSystemUID(t, clients)
	var newID string
	eventually(t, "the rebuilt cluster's kube-system namespace", func() bool {
		newID = kubeSystemUID(t, rebuilt)
		return newID != ""
	})
	if _, err := rebuilt.CoreV1().Namespaces().Create(bg, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{}
	for i := range 5 {
		want = append(want, fmt.Sprintf("deleted before-%d", i))
	}
	want = append(want, "added before-0") // the same name, another object
	names := []string{"before-0"}
	for i := range 25 {
		names = append(names, fmt.Sprintf("after-%d", i))
		want = append(want, fmt.Sprintf("added after-%d", i))
	}
	for _, name := range names {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": "new"}}
		if _, err := rebuilt.CoreV1().ConfigMaps(ns).Create(bg, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(want)
	var got []string
	eventually(t, "every change of the rebuilt cluster", func() bool {
		got = got[:0]
		for _, c := range w.records() {
			if c.Kind == "ConfigMap" && (c.Type != record.Updated || len(c.Changes) > 0) {
				got = append(got, c.Type+" "+c.Name)
			}
		}
		sort.Strings(got)
		return len(got) >= len(want)
	})
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("records:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if n := strings.Count(w.stderr.String(), "the cluster behind the API server changed"); n != 1 {
		t.Errorf("said %d times that the cluster changed, want once", n)
	}
	// Every one of these records comes from the rebuilt cluster: it names
	// the new cluster's id, not the one kubediff started with.
	for _, c := range w.records() {
		if c.Kind != "ConfigMap" {
			continue
		}
		if c.Cluster == nil || c.Cluster.ID != newID {
			t.Errorf("%s %s: cluster %+v, want id %s (the rebuilt cluster's; the old one was %s)", c.Type, c.Name, c.Cluster, newID, oldID)
		}
	}
}

// kubeSystemUID is the cluster's id: its kube-system namespace's UID
// ("" until the namespace exists).
func kubeSystemUID(t *testing.T, c kubernetes.Interface) string {
	t.Helper()
	ns, err := c.CoreV1().Namespaces().Get(bg, "kube-system", metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return string(ns.UID)
}

func clientFor(t *testing.T, kubeconfig string) *kubernetes.Clientset {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	return kubernetes.NewForConfigOrDie(cfg)
}

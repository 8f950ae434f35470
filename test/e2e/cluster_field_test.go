package e2e

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// TestRecordsNameTheirCluster: every record says which cluster it is of:
// the kubeconfig context's name (or --cluster-name) and the kube-system
// namespace's UID, so records of several clusters can share a sink.
func TestRecordsNameTheirCluster(t *testing.T) {
	ns := newNamespace(t)
	kc, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	system, err := clients.CoreV1().Namespaces().Get(bg, "kube-system", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		name string
	}{{nil, kc.CurrentContext}, {[]string{"--cluster-name", "prod-eu"}, "prod-eu"}} {
		w := startWatch(t, append([]string{"-n", ns}, tc.args...)...)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "named-"}}
		created, err := clients.CoreV1().ConfigMaps(ns).Create(bg, cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := w.waitRecords("ConfigMap", ns, created.Name, 1)[0]
		if c.Cluster == nil || c.Cluster.Name != tc.name || c.Cluster.ID != string(system.UID) {
			t.Errorf("%v: cluster %+v, want %q and kube-system's uid %s", tc.args, c.Cluster, tc.name, system.UID)
		}
		w.shutdown()
	}
}

package e2e

import (
	"path/filepath"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubediff/kubediff/internal/testenv"
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

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// TestDownAggregatedAPIIsOneLine: an APIService whose Service is missing
// (metrics-server gone) fails discovery at every rediscovery; kubediff
// says so in one line, keeps watching the rest, and says once when it is
// gone.
func TestDownAggregatedAPIIsOneLine(t *testing.T) {
	ns := newNamespace(t)
	group := fmt.Sprintf("m%d.e2e.kubediff.io", time.Now().UnixNano()%1000000)
	apiServices := dynamic.NewForConfigOrDie(env.Config).Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"})
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1beta1." + group},
		"spec": map[string]any{"group": group, "version": "v1beta1", "insecureSkipTLSVerify": true,
			"groupPriorityMinimum": int64(100), "versionPriority": int64(100),
			"service": map[string]any{"namespace": ns, "name": "missing", "port": int64(443)}},
	}}
	if _, err := apiServices.Create(bg, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = apiServices.Delete(bg, svc.GetName(), metav1.DeleteOptions{}) })
	w := startWatch(t, "-n", ns, "--rediscovery-interval", "1s")
	eventually(t, "the unavailable group named", func() bool {
		return hasLine(w.stderr.String(), "API groups unavailable", group)
	})
	// Rediscovery runs every second: five more find the group down.
	marks := strings.Count(w.stderr.String(), "level=")
	for i := range 5 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("tick-%d", i)}}
		if _, err := clients.CoreV1().ConfigMaps(ns).Create(bg, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		w.waitRecords("ConfigMap", ns, cm.Name, 1)
		time.Sleep(time.Second) // a rediscovery's interval: the scenario, not a wait for kubediff
	}
	if n := strings.Count(w.stderr.String(), group); n != 1 {
		t.Errorf("the down group is named %d times over 5 rediscoveries, want once:\n%s", n, w.stderr.String())
	}
	// A type of the down group named in resources is waited for, not a
	// usage error (a Deployment so configured would crash-loop).
	waiter := startWatch(t, "-n", ns, "--resources", "things."+group, "--rediscovery-interval", "1s")
	eventually(t, "one line saying the named type is waited for", func() bool {
		return hasLine(waiter.stderr.String(), "waiting for them", "things."+group)
	})
	// `kubediff resources` has a row for the group that does not answer.
	if out, code := cliOutput(t, "resources", "--kubeconfig", env.Kubeconfig); code != 0 || !hasLine(out, group, "unavailable") {
		t.Errorf("resources (exit %d) has no unavailable row for %s:\n%s", code, group, out)
	}
	if err := apiServices.Delete(bg, svc.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "one line saying it is back", func() bool {
		return hasLine(w.stderr.String(), "no longer unavailable", group)
	})
	t.Logf("%d log lines after the first warning", strings.Count(w.stderr.String(), "level=")-marks)
}

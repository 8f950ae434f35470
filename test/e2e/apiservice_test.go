package e2e

import (
	"crypto/tls"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kubediff/kubediff/pkg/history/apiservice"
)

// registerAPIService makes the API server forward history.kubediff.io to
// kubediff at port on this machine (an ExternalName Service naming
// localhost: in a cluster, the chart's Service names kubediff's Pod), and
// waits until the API server finds it available.
func registerAPIService(t *testing.T, ns string, port int) {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kubediff-history"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"}}
	if _, err := clients.CoreV1().Services(ns).Create(bg, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	name := apiservice.Version + "." + apiservice.Group
	api := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"group": apiservice.Group, "version": apiservice.Version,
			"service":               map[string]any{"namespace": ns, "name": svc.Name, "port": int64(port)},
			"insecureSkipTLSVerify": true, "groupPriorityMinimum": int64(100), "versionPriority": int64(100)},
	}}
	reg := dynamic.NewForConfigOrDie(env.Config).Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"})
	if _, err := reg.Create(bg, api, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Delete(bg, name, metav1.DeleteOptions{}) })
	eventually(t, "the APIService to be available", func() bool {
		got, err := reg.Get(bg, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		conditions, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conditions {
			if c, ok := c.(map[string]any); ok && c["type"] == "Available" {
				return c["status"] == "True"
			}
		}
		return false
	})
}

// TestHistoryThroughTheAPIServer: kubediff serves its history as the
// aggregated API history.kubediff.io, so that any kubeconfig reaches it
// through the cluster's API server, client certificates (as kind's) too.
// A user with a client certificate, allowed to list ConfigMaps in one
// namespace, sees that namespace's history only, with `history` and on
// the page of `kubediff ui`; the administrator sees both; a caller reaching kubediff's port directly, not through the API
// server's front proxy, is refused.
func TestHistoryThroughTheAPIServer(t *testing.T) {
	mine, other := newNamespace(t), newNamespace(t)+"-other"
	namedNamespace(t, other)
	for _, ns := range []string{mine, other} {
		createConfigMap(t, ns, "settings")
	}
	w := startWatch(t, "--resources", "configmaps", "-n", mine, "-n", other, "--state-dir", t.TempDir(), "--api-service-address", "127.0.0.1:0")
	w.logOnFailure()
	m := regexp.MustCompile(`aggregated API \S+ address=127\.0\.0\.1:(\d+)`).FindStringSubmatch(w.stderr.String())
	if m == nil {
		t.Fatalf("no aggregated API address logged")
	}
	port, _ := strconv.Atoi(m[1])
	registerAPIService(t, mine, port)
	for _, ns := range []string{mine, other} {
		setConfigMap(t, ns, "settings", "1")
		w.waitRecords("ConfigMap", ns, "settings", 1)
	}

	alice, err := env.AddUser("alice-" + mine)
	if err != nil {
		t.Fatal(err)
	}
	grantHistoryAccess(t, mine, "alice-"+mine, rbacv1.Subject{Kind: "User", Name: "alice-" + mine, APIGroup: "rbac.authorization.k8s.io"})
	history := func(kubeconfig string) string {
		t.Helper()
		var out string
		eventually(t, "the history through the API server", func() bool { // once kubediff has written it
			var code int
			out, code = cliOutput(t, "history", "--kubeconfig", kubeconfig, "--via-apiserver", "-A", "configmaps", "-o", "json")
			return code == 0 && strings.Contains(out, `"namespace":"`+mine+`"`)
		})
		return out
	}
	if out := history(env.Kubeconfig); !strings.Contains(out, `"namespace":"`+mine+`"`) || !strings.Contains(out, `"namespace":"`+other+`"`) {
		t.Errorf("the administrator should see both namespaces' history:\n%s", out)
	}
	if out := history(alice); !strings.Contains(out, `"namespace":"`+mine+`"`) || strings.Contains(out, other) {
		t.Errorf("alice (a client certificate, ConfigMaps of %s only) should see %s alone:\n%s", mine, mine, out)
	}

	// Blame and restore take the same way, with the same access.
	if out, code := cliOutput(t, "blame", "cm/settings", "-n", mine, "--kubeconfig", alice, "--via-apiserver"); code != 0 || !strings.Contains(out, "│   name: settings") {
		t.Errorf("alice's blame through the API server (exit %d):\n%s", code, out)
	}
	if out, code := cliOutput(t, "restore", "cm/settings", "-n", other, "--at", "0s", "--kubeconfig", alice, "--via-apiserver"); code != 1 || strings.Contains(out, "kind: ConfigMap") {
		t.Errorf("alice's restore of %s's ConfigMap through the API server (exit %d):\n%s", other, code, out)
	}

	// The page of `kubediff ui --via-apiserver` calls the API through it,
	// as alice.
	page, base := uiClient(t, startUI(t, "--via-apiserver", "--kubeconfig", alice))
	if code, body := uiGet(t, page, base, "/api/v1/history/records?namespace="+mine); code != http.StatusOK || !strings.Contains(body, `"namespace":"`+mine+`"`) {
		t.Errorf("kubediff ui --via-apiserver: the page's records answered %d:\n%s", code, body)
	}
	if code, body := uiGet(t, page, base, "/api/v1/history/records?namespace="+other); code != http.StatusOK || strings.Contains(body, `"namespace":"`+other+`"`) {
		t.Errorf("kubediff ui --via-apiserver: alice should see nothing of %s, got %d:\n%s", other, code, body)
	}

	// Straight to kubediff's port, claiming to be the administrator.
	direct := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	req, _ := http.NewRequest(http.MethodGet, "https://127.0.0.1:"+m[1]+apiservice.Prefix+"/records", nil)
	req.Header.Set("X-Remote-User", "kubediff-admin")
	req.Header.Set("X-Remote-Group", "system:masters")
	resp, err := direct.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a request not from the front proxy got %s, want 401", resp.Status)
	}
}

package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubediff/kubediff/internal/testenv"
)

// twoContexts writes a kubeconfig with the test control plane as context
// alpha and another cluster's server as context beta.
func twoContexts(t *testing.T, beta *testenv.APIServer) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	current := cfg.Contexts[cfg.CurrentContext]
	alpha := *current
	cfg.Contexts = map[string]*clientcmdapi.Context{"alpha": &alpha}
	cluster := *cfg.Clusters[current.Cluster]
	cluster.Server = beta.URL
	cfg.Clusters["beta"] = &cluster
	betaContext := alpha
	betaContext.Cluster = "beta"
	cfg.Contexts["beta"] = &betaContext
	cfg.CurrentContext = "alpha"
	path := filepath.Join(t.TempDir(), "kubeconfig-fleet")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSeveralClustersInOneProcess: `kubediff watch --context alpha
// --context beta` reports both clusters' changes, each record naming its
// cluster; when beta's API server is killed, alpha's changes are still
// reported, the outage is one line naming beta and /readyz says beta is
// the one; once beta is back, what changed there meanwhile is reported.
func TestSeveralClustersInOneProcess(t *testing.T) {
	ns := newNamespace(t)
	beta, _, betaClients := startBeta(t, ns)
	for _, cs := range []kubernetes.Interface{clients, betaClients} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"v": "0"}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(bg, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	set := func(cs kubernetes.Interface, value string) {
		t.Helper()
		patch := fmt.Sprintf(`{"data":{"v":%q}}`, value)
		if _, err := cs.CoreV1().ConfigMaps(ns).Patch(bg, "settings", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	stateDir := t.TempDir()
	w := startWatchAs(t, twoContexts(t, beta), "--context", "alpha", "--context", "beta", "--resources", "configmaps", "-n", ns, "-o", "json", "--state-dir", stateDir)
	w.logOnFailure()
	eventually(t, "both clusters watching", func() bool { return strings.Count(w.stderr.String(), "msg=watching") == 2 })

	reportedIn := func(cluster, value string) bool {
		for _, c := range w.recordsFor("ConfigMap", ns, "settings") {
			if c.Cluster != nil && c.Cluster.Name == cluster && len(c.Changes) > 0 && c.Changes[0].To == value {
				return true
			}
		}
		return false
	}
	set(clients, "1")
	set(betaClients, "1")
	eventually(t, "a change in each cluster", func() bool { return reportedIn("alpha", "1") && reportedIn("beta", "1") })
	ids := map[string]string{}
	for _, c := range w.recordsFor("ConfigMap", ns, "settings") {
		ids[c.Cluster.Name] = c.Cluster.ID
	}
	if ids["alpha"] == "" || ids["beta"] == "" || ids["alpha"] == ids["beta"] {
		t.Errorf("each cluster's records should carry its own id: %v", ids)
	}

	outageOfOne(t, w, beta, set, betaClients, reportedIn)
	w.shutdown()
	historiesArePerCluster(t, stateDir)
}

// outageOfOne kills beta's API server and checks alpha goes on.
func outageOfOne(t *testing.T, w *run, beta *testenv.APIServer, set func(kubernetes.Interface, string), betaClients kubernetes.Interface, reportedIn func(string, string) bool) {
	t.Helper()
	base := httpAddress(t, w)
	logsBefore := len(w.stderr.String())
	if err := beta.Kill(); err != nil {
		t.Fatal(err)
	}
	set(clients, "2")
	eventually(t, "alpha's change while beta is down", func() bool { return reportedIn("alpha", "2") })
	eventually(t, "kubediff to say beta is lost", func() bool {
		return strings.Contains(w.stderr.String()[logsBefore:], "lost the API server")
	})
	if code, body := get(t, base+"/readyz"); code != 503 || !strings.Contains(body, "cluster beta") || strings.Contains(body, "cluster alpha") {
		t.Errorf("/readyz with beta down = %d %q, want 503 naming beta only", code, body)
	}
	if err := beta.Start(); err != nil {
		t.Fatal(err)
	}
	set(betaClients, "3")
	eventually(t, "beta's change once it is back", func() bool { return reportedIn("beta", "3") })
	eventually(t, "/readyz once beta is back", func() bool { code, _ := get(t, base+"/readyz"); return code == 200 })
	logs := w.stderr.String()[logsBefore:]
	if n := strings.Count(logs, "lost the API server"); n != 1 || !strings.Contains(logs, "cluster=beta") || strings.Contains(logs, "cluster=alpha") {
		t.Errorf("want one line saying beta was lost (and nothing of alpha), got %d:\n%s", n, logs)
	}
	if _, body := get(t, base+"/metrics"); !strings.Contains(body, `kubediff_apiserver_connected{cluster="alpha"} 1`) ||
		!strings.Contains(body, `kubediff_apiserver_connected{cluster="beta"} 1`) {
		t.Errorf("metrics should carry each cluster's label")
	}
}

// historiesArePerCluster: each cluster's history is its own.
func historiesArePerCluster(t *testing.T, stateDir string) {
	t.Helper()
	for cluster, want := range map[string]string{"alpha": `"to":"2"`, "beta": `"to":"3"`} {
		out, code := cliOutput(t, "history", "--state-dir", stateDir, "--cluster", cluster, "-A", "configmaps", "-o", "json")
		if code != 0 || !strings.Contains(out, want) || strings.Count(out, `"name":"`+cluster+`"`) == 0 {
			t.Errorf("history --cluster %s (exit %d) lacks %s:\n%s", cluster, code, want, out)
		}
	}
}

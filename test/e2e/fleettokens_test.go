package e2e

import (
	"bytes"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestEachTokenGoesOnlyToItsCluster: one kubediff watches clusters alpha
// and beta, and beta's API server is reached through a proxy that
// records the tokens of the TokenReviews it is sent. A reader whose
// kubeconfig holds a token for each cluster (current context alpha)
// reads beta's history with `history --cluster beta` and `ui --cluster
// beta`: the CLI sends beta's token, beta checks it, and alpha's token
// never reaches beta. A token naming no cluster is refused before any
// review, and the page of `ui --cluster beta` cannot be turned to alpha.
func TestEachTokenGoesOnlyToItsCluster(t *testing.T) {
	ns := newNamespace(t)
	beta, betaRest, betaClients := startBeta(t, ns)
	reviews := recordTokenReviews(t, betaRest)
	w := startWatchAs(t, fleetThroughProxy(t, reviews.server), "--context", "alpha", "--context", "beta", "--resources", "configmaps", "-n", ns, "-o", "json", "--state-dir", t.TempDir())
	w.logOnFailure()
	eventually(t, "both clusters watching", func() bool { return strings.Count(w.stderr.String(), "msg=watching") == 2 })
	for name, cs := range map[string]kubernetes.Interface{"in-alpha": clients, "in-beta": betaClients} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(bg, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "both clusters' additions", func() bool {
		return len(w.recordsFor("ConfigMap", ns, "in-alpha")) > 0 && len(w.recordsFor("ConfigMap", ns, "in-beta")) > 0
	})
	alphaToken, betaToken := readerToken(t, clients, ns), readerToken(t, betaClients, ns)
	reader := readerKubeconfig(t, map[string]string{"alpha": alphaToken, "beta": betaToken}, beta.URL)
	base := httpAddress(t, w)

	var out string
	var code int
	poll(func() bool { // the history is written by the state dir's flush, once a second
		out, code = cliOutput(t, "history", "--kubeconfig", reader, "--server", base, "--cluster", "beta", "-n", ns, "configmaps", "-o", "json")
		return code != 0 || strings.Contains(out, "in-")
	})
	if code != 0 || !strings.Contains(out, `"name":"in-beta"`) || strings.Contains(out, "in-alpha") {
		t.Errorf("history --cluster beta (exit %d), want beta's records alone:\n%s", code, out)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/history/records?namespace="+ns, nil)
	req.Header.Set("Authorization", "Bearer "+alphaToken)
	if code, body := do(t, http.DefaultClient, req); code != http.StatusBadRequest || !strings.Contains(body, "?cluster=NAME") {
		t.Errorf("a token naming no cluster: %d %s, want 400 asking for ?cluster=", code, body)
	}

	page := startUI(t, "--kubeconfig", reader, "--server", base, "--cluster", "beta")
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	open, _ := http.NewRequest(http.MethodGet, page, nil)
	if code, body := do(t, browser, open); code != http.StatusOK {
		t.Fatalf("opening %s: %d %s", page, code, body)
	}
	root := strings.SplitN(page, "/open", 2)[0]
	get, _ := http.NewRequest(http.MethodGet, root+"/api/v1/history/records?namespace="+ns, nil)
	if code, body := do(t, browser, get); code != http.StatusOK || !strings.Contains(body, `"name":"in-beta"`) || strings.Contains(body, "in-alpha") {
		t.Errorf("the page of ui --cluster beta: %d, want beta's records alone:\n%s", code, body)
	}
	other, _ := http.NewRequest(http.MethodGet, root+"/api/v1/history/records?cluster=alpha&namespace="+ns, nil)
	if code, body := do(t, browser, other); code != http.StatusBadRequest || strings.Contains(body, "in-alpha") {
		t.Errorf("the page of ui --cluster beta asking for alpha: %d %s, want 400", code, body)
	}

	if !reviews.saw(betaToken) {
		t.Errorf("beta never checked the beta token")
	}
	if reviews.saw(alphaToken) {
		t.Errorf("alpha's token was sent to beta's API server in a TokenReview")
	}
}

func do(t *testing.T, c *http.Client, req *http.Request) (int, string) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// reviewRecorder is a TLS proxy in front of an API server that keeps the
// body of every TokenReview it passes on.
type reviewRecorder struct {
	server *httptest.Server
	mu     sync.Mutex
	bodies [][]byte
}

func recordTokenReviews(t *testing.T, upstream *rest.Config) *reviewRecorder {
	t.Helper()
	rt, err := rest.TransportFor(upstream)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(upstream.Host)
	if err != nil {
		t.Fatal(err)
	}
	r := &reviewRecorder{}
	proxy := &httputil.ReverseProxy{Transport: rt, FlushInterval: -1, Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target) }}
	r.server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasSuffix(req.URL.Path, "/tokenreviews") {
			body, _ := io.ReadAll(req.Body)
			r.mu.Lock()
			r.bodies = append(r.bodies, body)
			r.mu.Unlock()
			req.Body = io.NopCloser(bytes.NewReader(body))
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(r.server.Close)
	return r
}

// saw reports whether a TokenReview carried token (JSON or protobuf
// bodies alike: the token is in them as the bytes it is).
func (r *reviewRecorder) saw(token string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.bodies {
		if bytes.Contains(b, []byte(token)) {
			return true
		}
	}
	return false
}

// fleetThroughProxy is the admin kubeconfig with context alpha (the test
// control plane) and beta (another cluster, reached through proxy).
func fleetThroughProxy(t *testing.T, proxy *httptest.Server) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	current := cfg.Contexts[cfg.CurrentContext]
	alpha, betaContext := *current, *current
	betaContext.Cluster = "beta"
	cfg.Clusters["beta"] = &clientcmdapi.Cluster{Server: proxy.URL,
		CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: proxy.Certificate().Raw})}
	cfg.Contexts = map[string]*clientcmdapi.Context{"alpha": &alpha, "beta": &betaContext}
	cfg.CurrentContext = "alpha"
	path := filepath.Join(t.TempDir(), "kubeconfig-fleet")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// readerToken makes a ServiceAccount in ns of the cluster cs talks to,
// allowed to read ConfigMaps there, and returns a token for it.
func readerToken(t *testing.T, cs kubernetes.Interface, ns string) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "history-reader"}}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(bg, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Not the built-in view: without a controller manager, aggregated
	// roles have no rules.
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-history-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(bg, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.RbacV1().ClusterRoles().Delete(bg, role.Name, metav1.DeleteOptions{}) })
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-history-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: ns}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(bg, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.RbacV1().ClusterRoleBindings().Delete(bg, binding.Name, metav1.DeleteOptions{}) })
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(bg, sa.Name, &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// readerKubeconfig is a kubeconfig with a context per cluster, each with
// its own token (alpha current), as a person reading a fleet holds.
func readerKubeconfig(t *testing.T, tokens map[string]string, betaURL string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	current := cfg.Contexts[cfg.CurrentContext]
	alphaCluster := *cfg.Clusters[current.Cluster]
	betaCluster := alphaCluster
	betaCluster.Server = betaURL
	cfg.Clusters = map[string]*clientcmdapi.Cluster{"alpha": &alphaCluster, "beta": &betaCluster}
	cfg.AuthInfos, cfg.Contexts = map[string]*clientcmdapi.AuthInfo{}, map[string]*clientcmdapi.Context{}
	for name, token := range tokens {
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	cfg.CurrentContext = "alpha"
	path := filepath.Join(t.TempDir(), "kubeconfig-reader")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

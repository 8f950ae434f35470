package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestClusterChoosesTheContextWhoseCredentialsAreSent: --cluster NAME
// sends the credentials of the kubeconfig context NAME (through the API
// server: to that context's API server), never the current context's;
// a kubeconfig without that context is a usage error naming --cluster.
func TestClusterChoosesTheContextWhoseCredentialsAreSent(t *testing.T) {
	var mu sync.Mutex
	var seen []string // "server token cluster"
	server := func(name string) *httptest.Server {
		s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, name+" "+r.Header.Get("Authorization")+" cluster="+r.URL.Query().Get("cluster"))
			mu.Unlock()
			http.Error(w, `{"error":"no"}`, http.StatusNotFound)
		}))
		// An API server speaks TLS (client-go sends no credentials to
		// one that does not); kubediff's own address is plain HTTP.
		if name == "kubediff" {
			s.Start()
		} else {
			s.StartTLS()
		}
		t.Cleanup(s.Close)
		return s
	}
	a, b, kubediff := server("a"), server("b"), server("kubediff")
	cfg := clientcmdapi.NewConfig()
	for name, s := range map[string]*httptest.Server{"a": a, "b": b} {
		cfg.Clusters[name] = &clientcmdapi.Cluster{Server: s.URL, InsecureSkipTLSVerify: true}
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: "token-for-" + name}
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	cfg.CurrentContext = "a"
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kc); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--server", kubediff.URL, "--cluster", "b"}, "kubediff Bearer token-for-b cluster=b"},
		{[]string{"--via-apiserver", "--cluster", "b"}, "b Bearer token-for-b cluster="},
		{[]string{"--server", kubediff.URL, "--cluster", "b", "--context", "a"}, "kubediff Bearer token-for-a cluster=b"},
	} {
		seen = nil
		var stdout, stderr strings.Builder
		Run(context.Background(), append([]string{"history", "--kubeconfig", kc, "configmaps"}, c.args...), &stdout, &stderr)
		mu.Lock()
		got := strings.Join(seen, "; ")
		mu.Unlock()
		if !strings.HasPrefix(got, c.want) || strings.Contains(got, "token-for-a") != strings.Contains(c.want, "token-for-a") {
			t.Errorf("%v: requests %q, want %q (stderr: %s)", c.args, got, c.want, stderr.String())
		}
	}
	var stdout, stderr strings.Builder
	if code := Run(context.Background(), []string{"history", "--kubeconfig", kc, "--server", kubediff.URL, "--cluster", "c"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), `--cluster c: your kubeconfig has no context "c"`) {
		t.Errorf("--cluster without its context: exit %d, %s", code, stderr.String())
	}
}

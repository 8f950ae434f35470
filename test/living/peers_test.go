package living

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// kubewatchConfig watches every type kubewatch knows that this API
// server still serves (its ClusterRoles and Ingresses use API versions
// removed since), and posts each event to a webhook.
const kubewatchConfig = `handler:
  webhook:
    url: %s/kubewatch
resource:
  deployment: true
  replicationcontroller: true
  replicaset: true
  daemonset: true
  services: true
  pod: true
  job: true
  node: true
  serviceaccount: true
  persistentvolume: true
  namespace: true
  secret: true
  configmap: true
`

// peerMessages counts what a compared tool posts to its webhook.
type peerMessages struct {
	mu   sync.Mutex
	seen []string // "reason kind name", in order
	log  strings.Builder
}

func (p *peerMessages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var m struct {
		EventMeta struct{ Kind, Name, Reason string } `json:"eventmeta"`
	}
	body, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(body, &m)
	p.mu.Lock()
	p.seen = append(p.seen, m.EventMeta.Reason+" "+m.EventMeta.Kind+" "+m.EventMeta.Name)
	p.mu.Unlock()
}

// stderr is what the tool logged, last 2,000 bytes.
func (p *peerMessages) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.log.String()
	return s[max(0, len(s)-2000):]
}

func (p *peerMessages) messages() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

// startKubewatch runs kubewatch (built by `make peers` from its last Go
// module release) against the cluster until the test ends, and returns
// what it posts.
func startKubewatch(t *testing.T) *peerMessages {
	t.Helper()
	bin := filepath.Join(filepath.Dir(env.Kubectl), "kubewatch")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("kubewatch is not built (make peers): %v", err)
	}
	msgs := &peerMessages{}
	srv := httptest.NewServer(msgs)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".kubewatch.yaml"), []byte(fmt.Sprintf(kubewatchConfig, srv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "KW_CONFIG="+dir, "KUBECONFIG="+env.Kubeconfig, "HOME="+dir)
	cmd.Stdout, cmd.Stderr = io.Discard, &lockedWriter{mu: &msgs.mu, w: &msgs.log}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return msgs
}

// lockedWriter lets a process write while the test may read.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

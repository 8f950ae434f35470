package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubediff/kubediff/internal/testenv"
	"github.com/kubediff/kubediff/pkg/record"
)

// webhookReceiver answers 500 until failUntil, then records what it gets.
type webhookReceiver struct {
	mu        sync.Mutex
	failUntil time.Time
	failures  int
	got       []record.Change
	sigs      []string
}

func (wr *webhookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	wr.mu.Lock()
	defer wr.mu.Unlock()
	if time.Now().Before(wr.failUntil) {
		wr.failures++
		http.Error(w, "starting up", http.StatusInternalServerError)
		return
	}
	var c record.Change
	if err := json.Unmarshal(body, &c); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	wr.got = append(wr.got, c)
	wr.sigs = append(wr.sigs, r.Header.Get("X-Kubediff-Signature-256"))
	w.WriteHeader(http.StatusOK)
}

func (wr *webhookReceiver) records() []record.Change {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	return append([]record.Change(nil), wr.got...)
}

// TestWebhookAndSlackReceiveEveryChange is the sinks issue's acceptance
// check: a webhook answering 500 for its first 3 seconds still receives all
// 30 updates of 10 ConfigMaps, each object's in order; a Slack sink gets a
// message naming the object and field; neither the token nor the webhook
// secret appears in kubediff's output.
func TestWebhookAndSlackReceiveEveryChange(t *testing.T) {
	const slackToken, hmacSecret = "xoxb-e2e-canary-3141", "hmac-e2e-canary-2718"
	ns := newNamespace(t)
	hook := &webhookReceiver{failUntil: time.Now().Add(3 * time.Second)}
	hookSrv := httptest.NewServer(hook)
	defer hookSrv.Close()
	slackAPI := &testenv.SlackServer{}
	slackSrv := httptest.NewServer(slackAPI)
	defer slackSrv.Close()

	dir := t.TempDir()
	secretFile := filepath.Join(dir, "hmac")
	if err := os.WriteFile(secretFile, []byte(hmacSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("E2E_SLACK_TOKEN", slackToken)
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
sinks:
  - name: audit
    type: webhook
    url: %s/kubediff
    secretFile: %s
    match:
      resources: [configmaps]
  - name: team
    type: slack
    token: ${E2E_SLACK_TOKEN}
    channel: "#changes"
    apiURL: %s/api/
    match:
      resources: [configmaps]
      types: [updated]
`, hookSrv.URL, secretFile, slackSrv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	w := startWatch(t, "-n", ns, "--config", cfg, "--log-level", "debug")

	cms := clients.CoreV1().ConfigMaps(ns)
	for i := range 10 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}, Data: map[string]string{"k": "0"}}
		if _, err := cms.Create(bg, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for v := 1; v <= 3; v++ {
		for i := range 10 {
			patch := fmt.Sprintf(`{"data":{"k":"%d"}}`, v)
			if _, err := cms.Patch(bg, fmt.Sprintf("cm-%d", i), types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}

	var updates []record.Change
	eventually(t, "30 updates at the webhook", func() bool {
		updates = updates[:0]
		for _, c := range hook.records() {
			if c.Type == "updated" {
				updates = append(updates, c)
			}
		}
		return len(updates) >= 30
	})
	if len(updates) != 30 {
		t.Fatalf("webhook got %d updates, want exactly 30", len(updates))
	}
	last := map[string]string{}
	for _, c := range updates {
		to := c.Changes[0].To.(string)
		if to <= last[c.Name] {
			t.Fatalf("%s: value %s arrived after %s", c.Name, to, last[c.Name])
		}
		last[c.Name] = to
	}
	if hook.failures == 0 {
		t.Fatal("the webhook never failed: the test proved nothing about retries")
	}
	for _, sig := range hook.sigs {
		if !strings.HasPrefix(sig, "sha256=") {
			t.Fatalf("unsigned delivery: %q", sig)
		}
	}

	eventually(t, "a Slack message naming cm-0 and data.k", func() bool {
		for _, m := range slackAPI.Messages() {
			if strings.HasPrefix(m, "#changes ") && strings.Contains(m, ns+"/cm-0") && strings.Contains(m, "data.k") {
				return true
			}
		}
		return false
	})
	for _, m := range slackAPI.Messages() {
		if strings.Contains(m, "added ConfigMap") {
			t.Fatalf("the Slack sink's match (types: [updated]) let an added record through: %s", m)
		}
	}
	output := w.stdout.String() + w.stderr.String()
	for _, secret := range []string{slackToken, hmacSecret} {
		if strings.Contains(output, secret) {
			t.Errorf("%q appears in kubediff's output", secret)
		}
	}
	t.Logf("webhook refused %d deliveries before recovering; slack got %d messages", hook.failures, len(slackAPI.Messages()))
}

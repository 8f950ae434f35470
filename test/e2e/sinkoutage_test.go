package e2e

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestSinkOutageSurvivesARestart: a webhook answers 500 for 40 s while
// 300 changes are made, more than its in-memory queue (queueSize 10) could hold;
// kubediff, with a state dir, is stopped (SIGTERM) during the outage and
// started again; when the webhook heals, all 300 records arrive, in order
// per object, each once, and with the same ids as stdout printed.
func TestSinkOutageSurvivesARestart(t *testing.T) {
	const objects, patches = 30, 10
	ns := newNamespace(t)
	cms := clients.CoreV1().ConfigMaps(ns)
	for i := range objects {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%02d", i)}, Data: map[string]string{"v": "0"}}
		if _, err := cms.Create(bg, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	hook := &webhookReceiver{failUntil: time.Now().Add(time.Hour)}
	srv := httptest.NewServer(hook)
	defer srv.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
drainTimeout: 2s
sinks:
  - name: audit
    type: webhook
    url: %s/hook
    queueSize: 10
    queueMaxBytes: 4Mi
`, srv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"watch", "-n", ns, "--config", cfg, "--state-dir", filepath.Join(dir, "state")}
	outageStart := time.Now()

	first := startBinary(t, args...)
	for p := 1; p <= patches; p++ {
		for i := range objects {
			body := fmt.Sprintf(`{"data":{"v":"%d"}}`, p)
			if _, err := cms.Patch(bg, fmt.Sprintf("cm-%02d", i), types.MergePatchType, []byte(body), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	eventually(t, "stdout to print all 300 changes", func() bool { return len(first.records()) >= objects*patches })
	printed := map[string]bool{}
	for _, c := range first.records() {
		printed[c.ID] = true
	}
	eventually(t, "the webhook to be tried", func() bool {
		hook.mu.Lock()
		defer hook.mu.Unlock()
		return hook.failures > 0
	})
	stopWith(t, first, syscall.SIGTERM)
	if !strings.Contains(first.stderr.String(), "undelivered records kept in the state dir") {
		t.Errorf("stopping during the outage did not say the records were kept; stderr:\n%s", first.stderr.String())
	}
	if n := len(hook.records()); n != 0 {
		t.Fatalf("the webhook failed throughout, yet %d records count as delivered", n)
	}

	hook.mu.Lock()
	triedBefore := hook.failures
	hook.mu.Unlock()
	second := startBinary(t, args...)
	// The outage goes on after the restart, until the kept records have
	// been tried again; then it ends.
	eventually(t, "the restarted kubediff to try the webhook again", func() bool {
		hook.mu.Lock()
		defer hook.mu.Unlock()
		return hook.failures > triedBefore
	})
	// The outage is the scenario's 40 s, not a wait for anything.
	time.Sleep(time.Until(outageStart.Add(40 * time.Second)))
	hook.mu.Lock()
	hook.failUntil = time.Now()
	hook.mu.Unlock()
	healed := time.Now()
	t.Logf("webhook outage lasted %s, with a restart of kubediff", time.Since(outageStart).Round(time.Second))

	eventually(t, "all 300 records at the webhook", func() bool { return len(hook.records()) >= objects*patches })
	t.Logf("all delivered %s after the webhook healed; kubediff's log for the outage after the restart:\n%s",
		time.Since(healed).Round(100*time.Millisecond), second.stderr.String())
	got := hook.records()
	if len(got) != objects*patches {
		t.Errorf("the webhook got %d records, want %d, each once", len(got), objects*patches)
	}
	seen := map[string]bool{}
	last := map[string]int{}
	for _, c := range got {
		if seen[c.ID] {
			t.Errorf("record %s delivered twice", c.ID)
		}
		seen[c.ID] = true
		if !printed[c.ID] {
			t.Errorf("record %s: id not among those stdout printed before the stop", c.ID)
		}
		var v int
		if len(c.Changes) == 1 {
			fmt.Sscan(fmt.Sprint(c.Changes[0].To), &v)
		}
		if v != last[c.Name]+1 {
			t.Errorf("%s: got value %d after %d: out of order or a change missing", c.Name, v, last[c.Name])
		}
		last[c.Name] = v
	}
	if len(second.records()) != 0 {
		t.Errorf("nothing changed while kubediff was down, yet the restart printed %d records", len(second.records()))
	}
}

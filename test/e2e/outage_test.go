package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestAPIServerOutages: kubediff watches through a second kube-apiserver
// on the same etcd while changes go through the first. The second is
// stopped (SIGSTOP: connections hang, as in a partition) for 60 s, then
// killed and started again 20 s later. Each time all 10 changes made
// meanwhile are reported once the server answers again (how long that
// took is logged: on a loaded machine it is seconds, so it is not
// asserted), and the outage is a couple of log lines, not one per type
// per retry, the second counting the 10 changes.
func TestAPIServerOutages(t *testing.T) {
	ns := newNamespace(t)
	cms := clients.CoreV1().ConfigMaps(ns)
	for i := range 10 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}, Data: map[string]string{"phase": "start"}}
		if _, err := cms.Create(bg, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	second, err := env.StartSecondAPIServer()
	if err != nil {
		t.Fatal(err)
	}
	// Stopped when the test ends: its watch caches follow every write.
	t.Cleanup(func() { _ = second.Kill() })
	second.LogOnFailure(t)
	w := startBinaryWithEnv(t, []string{"KUBECONFIG=" + second.Kubeconfig}, "watch", "-n", ns)
	w.logOnFailure()
	base := httpAddress(t, w)
	changeAll := func(phase string) {
		t.Helper()
		for i := range 10 {
			patch := fmt.Sprintf(`{"data":{"phase":%q}}`, phase)
			if _, err := cms.Patch(bg, fmt.Sprintf("cm-%d", i), types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	reported := func(phase string) int {
		n := 0
		for _, c := range w.records() {
			if c.Type == "updated" && len(c.Changes) > 0 && c.Changes[0].To == phase {
				n++
			}
		}
		return n
	}
	// outage runs one: cause it, change everything meanwhile, end it, and
	// check what kubediff reported and logged.
	outage := func(phase string, cause func(), downFor time.Duration, end func()) {
		t.Helper()
		logsBefore := len(w.stderr.String())
		cause()
		changeAll(phase)
		eventually(t, "kubediff to say it lost the API server", func() bool {
			return strings.Contains(w.stderr.String()[logsBefore:], "lost the API server")
		})
		// Readiness and a metric say so too, for probes and alerts.
		if code, body := get(t, base+"/readyz"); code != 503 || !strings.Contains(body, "API server does not answer") {
			t.Errorf("%s: /readyz during the outage = %d %s", phase, code, body)
		}
		if _, body := get(t, base+"/metrics"); !strings.Contains(body, "kubediff_apiserver_connected 0") {
			t.Errorf("%s: kubediff_apiserver_connected is not 0 during the outage", phase)
		}
		time.Sleep(time.Until(time.Now().Add(downFor))) // the outage's length is the scenario, not a wait for kubediff
		end()
		answering := time.Now()
		eventually(t, "the 10 changes made during the outage", func() bool { return reported(phase) >= 10 })
		took := time.Since(answering)
		eventually(t, "kubediff to say the API server is back", func() bool {
			return strings.Contains(w.stderr.String()[logsBefore:], "API server back")
		})
		logs := w.stderr.String()[logsBefore:]
		lines := strings.Split(strings.TrimSpace(logs), "\n")
		t.Logf("%s: 10 of 10 changes reported %s after the server answered; %d log lines:\n%s", phase, took.Round(100*time.Millisecond), len(lines), logs)
		if got := reported(phase); got != 10 {
			t.Errorf("%s: %d records for 10 changes", phase, got)
		}
		if len(lines) > 3 || strings.Count(logs, "lost the API server") != 1 || strings.Count(logs, "API server back: watches resumed") != 1 {
			t.Errorf("%s: want one line when the server was lost and one when it came back and the watches resumed, got %d lines", phase, len(lines))
		}
		if code, _ := get(t, base+"/readyz"); code != 200 {
			t.Errorf("%s: /readyz after the outage = %d", phase, code)
		}
		if m := regexp.MustCompile(`changesSinceLost=(\d+)`).FindStringSubmatch(logs); m == nil || m[1] != "10" {
			t.Errorf("%s: the line saying it is back should count the 10 changes: %v", phase, m)
		}
	}

	outage("paused", func() {
		if err := second.Pause(); err != nil {
			t.Fatal(err)
		}
	}, 60*time.Second, func() {
		if err := second.Resume(); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the resumed server to answer", func() bool { return second.Ready(context.Background()) })
	})
	outage("killed", func() {
		if err := second.Kill(); err != nil {
			t.Fatal(err)
		}
	}, 20*time.Second, func() {
		if err := second.Start(); err != nil {
			t.Fatal(err)
		}
	})
}

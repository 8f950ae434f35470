package e2e

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubediff/kubediff/pkg/record"
)

const tenEnvDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        env: [{name: E1, value: "1"},{name: E2, value: "2"},{name: E3, value: "3"},{name: E4, value: "4"},{name: E5, value: "5"},
              {name: E6, value: "6"},{name: E7, value: "7"},{name: E8, value: "8"},{name: E9, value: "9"},{name: E10, value: "10"}]
      - name: sidecar
        image: busybox:1.36
`

func TestEnvInsertedAtTopIsOneNamedChange(t *testing.T) {
	ns := newNamespace(t)
	kubectl(t, tenEnvDeployment, "-n", ns, "apply", "-f", "-")
	w := startWatch(t, "-n", ns)
	kubectl(t, "", "-n", ns, "patch", "deployment", "web", "--type", "json",
		"-p", `[{"op":"add","path":"/spec/template/spec/containers/0/env/0","value":{"name":"FEATURE_X","value":"on"}}]`)

	got := w.waitRecords("Deployment", ns, "web", 1)
	if len(got) != 1 || len(got[0].Changes) != 1 {
		t.Fatalf("want one record with one change, got:\n%s", w.stdout.String())
	}
	c := got[0].Changes[0]
	if c.Op != record.OpAdd || c.Field != "spec.template.spec.containers[name=web].env[name=FEATURE_X]" || c.Path != "/spec/template/spec/containers/0/env/0" {
		t.Fatalf("change = %+v", c)
	}
}

func TestScaleIsAttributedToKubectl(t *testing.T) {
	ns := newNamespace(t)
	kubectl(t, tenEnvDeployment, "-n", ns, "apply", "-f", "-")
	w := startWatch(t, "-n", ns)
	kubectl(t, "", "-n", ns, "scale", "deployment", "web", "--replicas", "3")

	got := w.waitRecords("Deployment", ns, "web", 1)
	if got[0].Changed != "spec.replicas" {
		t.Fatalf("changed = %q", got[0].Changed)
	}
	if m := got[0].Manager; m == nil || !strings.HasPrefix(m.Name, "kubectl") {
		t.Fatalf("manager = %+v, want kubectl", m)
	}
	t.Logf("kubectl scale attributed to %+v", *got[0].Manager)
}

// TestRepeatedScaleIsAttributedToKubectl: the API server gives the
// `kubectl` entry of the scale subresource no new time when it scales
// again (it owns spec.replicas already), while the deployment controller's
// status writes between the scales move its own. Each scale is still
// kubectl's, never the status writer's.
func TestRepeatedScaleIsAttributedToKubectl(t *testing.T) {
	ns := newNamespace(t)
	kubectl(t, tenEnvDeployment, "-n", ns, "apply", "-f", "-")
	w := startWatch(t, "-n", ns)
	w.logOnFailure()
	deployments := clients.AppsV1().Deployments(ns)
	for i, replicas := range []int32{5, 2, 3} {
		kubectl(t, "", "-n", ns, "scale", "deployment", "web", fmt.Sprintf("--replicas=%d", replicas))
		scaledAt := time.Now()
		got := w.waitRecords("Deployment", ns, "web", i+1)[i]
		if got.Changed != "spec.replicas" || len(got.Changes) != 1 || got.Changes[0].To != float64(replicas) {
			t.Fatalf("scale to %d: record %+v", replicas, got)
		}
		if m := got.Manager; m == nil || m.Name != "kubectl" || m.Subresource != "scale" {
			t.Errorf("scale to %d attributed to %+v, want kubectl on the scale subresource", replicas, m)
		}
		// What the deployment controller does next, in a later second
		// so that its entry's time is the newest: report the counters
		// (quiet: no record).
		eventually(t, "the next second", func() bool { return time.Now().Unix() > scaledAt.Unix() })
		d, err := deployments.Get(bg, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: replicas, UpdatedReplicas: replicas}
		if _, err := deployments.UpdateStatus(bg, d, metav1.UpdateOptions{FieldManager: "kube-controller-manager"}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSecretValuesNeverAppear(t *testing.T) {
	ns := newNamespace(t)
	const before, canary = "first-value-8d1f", "CANARY-5e3a9c-value"
	w := startWatch(t, "-n", ns, "--log-level", "debug")
	kubectl(t, "", "-n", ns, "create", "secret", "generic", "db", "--from-literal=password="+before, "--from-literal=user=admin")
	kubectl(t, "", "-n", ns, "patch", "secret", "db", "--type", "merge", "-p", `{"stringData":{"password":"`+canary+`"}}`)
	// Applied with kubectl apply, a Secret's values are also copied into the
	// last-applied annotation.
	kubectl(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: applied}\nstringData: {token: "+canary+"}\n", "-n", ns, "apply", "-f", "-")
	kubectl(t, "", "-n", ns, "delete", "secret", "db")

	got := w.waitRecords("Secret", ns, "db", 3)
	w.waitRecords("Secret", ns, "applied", 1)
	if got[1].Changed != "data.password" || !strings.Contains(got[1].Changes[0].To.(string), "redacted") {
		t.Fatalf("update record should show data.password changed, redacted: %+v", got[1])
	}
	output := w.stdout.String() + w.stderr.String()
	for _, secret := range []string{before, canary, base64.StdEncoding.EncodeToString([]byte(canary)), base64.StdEncoding.EncodeToString([]byte(before))} {
		if strings.Contains(output, secret) {
			t.Errorf("%q appears in kubediff's output", secret)
		}
	}
}

// TestIdleClusterIsQuiet watches the control plane for a minute without
// touching it: lease renewals and other bookkeeping must print nothing.
func TestIdleClusterIsQuiet(t *testing.T) {
	if testing.Short() {
		t.Skip("watches for 60 s")
	}
	w := startWatch(t)
	end := time.Now().Add(60 * time.Second)
	for time.Now().Before(end) {
		if out := w.stdout.String(); out != "" {
			t.Fatalf("idle cluster produced records:\n%s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

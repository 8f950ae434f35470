package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestHistoryKeepsTheStatusTheQuietRulesHide: a Deployment's status moves
// on without a record (the replica counters are quiet), and `get --at`
// answers the status the API server holds, not the one of the last
// reported change; `history` still lists only what was reported.
func TestHistoryKeepsTheStatusTheQuietRulesHide(t *testing.T) {
	ns := newNamespace(t)
	w := startBinary(t, "watch", "-n", ns, "--state-dir", filepath.Join(t.TempDir(), "state"))
	w.logOnFailure()
	deployments := clients.AppsV1().Deployments(ns)
	labels, replicas := map[string]string{"app": "web"}, int32(5)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}}}}
	d, err := deployments.Create(bg, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.waitRecords("Deployment", ns, "web", 1)
	// What the deployment controller would write: counters only.
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 5, UpdatedReplicas: 5, ReadyReplicas: 4, AvailableReplicas: 4}
	if _, err := deployments.UpdateStatus(bg, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	reads := rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list"}}
	live := []string{"--server", httpAddress(t, w), "--kubeconfig", serviceAccountKubeconfig(t, ns, "viewer", reads, ns)}
	var out string
	eventually(t, "the status in the history", func() bool {
		now := time.Now().UTC().Format(time.RFC3339Nano)
		out, _ = cliOutput(t, append([]string{"get", "deploy/web", "-n", ns, "--at", now}, live...)...)
		return strings.Contains(out, "readyReplicas: 4")
	})
	if !strings.Contains(out, "availableReplicas: 4") || !strings.Contains(out, "observedGeneration: 1") {
		t.Errorf("get --at shows another status than the API server's:\n%s", out)
	}
	if got := w.recordsFor("Deployment", ns, "web"); len(got) != 1 {
		t.Errorf("watch printed %d records for the Deployment, want 1: its counters are quiet", len(got))
	}
	if out, code := cliOutput(t, append([]string{"history", "deploy/web", "-n", ns}, live...)...); code != 0 || strings.Count(out, "\n") != 1 {
		t.Errorf("history lists (exit %d), want the creation alone:\n%s", code, out)
	}
}

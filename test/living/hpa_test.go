package living

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kubediff/kubediff/internal/testenv"
	"github.com/kubediff/kubediff/pkg/record"
)

// TestAnHPAsScalingIsNotDrift: a Deployment Argo CD applied (its write
// imitated: server-side apply as argocd-controller, the tracking
// annotation; Argo CD does not run here) at one replica, and a real
// HorizontalPodAutoscaler whose minimum is three: the real
// kube-controller-manager scales the Deployment through its scale
// subresource (below the minimum, it needs no metrics), and that record
// says nothing of GitOps, where a person's edit of the same Deployment
// says outside.
func TestAnHPAsScalingIsNotDrift(t *testing.T) {
	run := kubectlOrFail(t)
	ns := fmt.Sprintf("hpa-%d", time.Now().UnixNano()%100000)
	run("", "create", "namespace", ns)
	stdout, _, _ := watch(t, "-o", "json", "-n", ns)
	run(fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: %[1]s
  annotations: {argocd.argoproj.io/tracking-id: "%[1]s_shop:apps/Deployment:%[1]s/web"}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "nginx:1.27", resources: {requests: {cpu: 10m}}}]}
`, ns), "apply", "--server-side", "--field-manager", "argocd-controller", "-f", "-")
	run("", "-n", ns, "autoscale", "deployment/web", "--min=3", "--max=5", "--cpu=80%")
	scaled := func(c record.Change) bool {
		return c.Kind == "Deployment" && c.Name == "web" && c.Manager != nil && c.Manager.Name == "kube-controller-manager" &&
			slices.ContainsFunc(c.Changes, func(fc record.FieldChange) bool { return fc.Path == "/spec/replicas" })
	}
	testenv.Eventually(t, "the HPA's scaling of the Deployment", 3*time.Minute, func() bool {
		return slices.ContainsFunc(testenv.ParseRecords(t, stdout.String()), scaled)
	})
	records := testenv.ParseRecords(t, stdout.String())
	c := records[slices.IndexFunc(records, scaled)]
	if c.Manager.Subresource != "scale" || c.GitOps != nil {
		t.Errorf("the HPA's scaling (%s by %+v) says gitops %+v, want nothing (an autoscaler owns replicas)", c.Changed, c.Manager, c.GitOps)
	}
	run("", "-n", ns, "set", "image", "deployment/web", "web=nginx:1.28")
	testenv.Eventually(t, "the person's edit, outside Argo CD", 2*time.Minute, func() bool {
		return slices.ContainsFunc(testenv.ParseRecords(t, stdout.String()), func(c record.Change) bool {
			return c.Kind == "Deployment" && c.Manager != nil && c.Manager.Name == "kubectl-set" && c.GitOps != nil && c.GitOps.Via == record.ViaOutside
		})
	})
}

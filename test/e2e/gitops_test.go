package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/record"
)

// installReleaseCRDs installs Argo CD's Application and Flux's
// Kustomization CRDs as their projects ship them (testdata/releasecrds,
// pinned there), and waits until the API server serves them.
func installReleaseCRDs(t *testing.T) {
	t.Helper()
	dir := filepath.Join("testdata", "releasecrds")
	for _, file := range []string{"argocd-application-crd.yaml", "kustomize.toolkit.fluxcd.io_kustomizations.yaml"} {
		kubectl(t, "", "apply", "--server-side", "--force-conflicts", "-f", filepath.Join(dir, file))
	}
	kubectl(t, "", "wait", "--for=condition=Established", "--timeout=60s",
		"crd/applications.argoproj.io", "crd/kustomizations.kustomize.toolkit.fluxcd.io")
}

// sha is a made-up Git commit, 40 hex digits.
func sha(seed string) string { return strings.Repeat(seed, 40/len(seed)) }

// syncApplication writes what Argo CD's application controller writes
// for one sync of Application shop to revision, and the Deployment it
// applies between: the running operation (with the revision) first, the
// Deployment by server-side apply as argocd-controller with the tracking
// annotation, then the finished operation and the synced revision. Argo
// CD itself does not run: these are its writes, as its source (v3.2.0)
// makes them.
func syncApplication(t *testing.T, ns, revision, image string) {
	t.Helper()
	started := time.Now().UTC().Format(time.RFC3339)
	running := fmt.Sprintf(`{"status":{"operationState":{"phase":"Running","message":"one or more tasks are running","startedAt":%q,
"operation":{"sync":{"revision":%q},"initiatedBy":{"automated":true}},"syncResult":{"revision":%q}}}}`, started, revision, revision)
	kubectl(t, "", "patch", "application", "shop", "-n", ns, "--type", "merge", "--field-manager", "argocd-application-controller", "-p", running)
	deployment := fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: %s
  annotations: {argocd.argoproj.io/tracking-id: "%s_shop:apps/Deployment:%s/web"}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: %q}]}
`, ns, ns, ns, image)
	kubectl(t, deployment, "apply", "--server-side", "--field-manager", "argocd-controller", "-f", "-")
	finished := fmt.Sprintf(`{"status":{"sync":{"status":"Synced","revision":%q},"operationState":{"phase":"Succeeded","message":"successfully synced (all tasks run)",
"finishedAt":%q}}}`, revision, time.Now().UTC().Format(time.RFC3339))
	kubectl(t, "", "patch", "application", "shop", "-n", ns, "--type", "merge", "--field-manager", "argocd-application-controller", "-p", finished)
}

// TestApplicationSyncNamesItsGitRevision: with Argo CD's real
// Application CRD and its controller's writes made by the test (Argo CD
// does not run), the records of a Deployment an Application synced name
// the Application and the Git revision of each sync; history --release
// lists them.
func TestApplicationSyncNamesItsGitRevision(t *testing.T) {
	installReleaseCRDs(t)
	ns := newNamespace(t)
	viewer := releaseViewer(t, ns)
	w := startWatch(t, "-n", ns, "--state-dir", t.TempDir())
	w.logOnFailure()
	app := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: shop, namespace: %s}
spec:
  project: default
  source: {repoURL: "https://git.example.com/shop.git", path: deploy, targetRevision: main}
  destination: {server: "https://kubernetes.default.svc", namespace: %s}
  syncPolicy: {automated: {}}
`, ns, ns)
	kubectl(t, app, "create", "--field-manager", "argocd-server", "-f", "-")
	first, second := sha("4f1c2a9d"), sha("9e8d7c6b")
	syncApplication(t, ns, first, "nginx:1.27")
	syncApplication(t, ns, second, "nginx:1.28")
	recs := w.waitRecords("Deployment", ns, "web", 2)
	for i, want := range []string{first, second} {
		r := recs[i].Release
		if r == nil || r.Tool != "argocd" || r.Kind != "Application" || r.Namespace != ns || r.Name != "shop" || r.GitRevision != want || r.Status != "Running" {
			t.Errorf("record %d (%s) names release %+v, want Application %s/shop at revision %s, Running", i, recs[i].Type, r, ns, want)
		}
	}
	server := httpAddress(t, w)
	var out string
	defer func() {
		if t.Failed() {
			t.Logf("history's last answer:\n%s", out)
		}
	}()
	eventually(t, "the Application's records in the history", func() bool {
		out, _ = cliOutput(t, "history", "--release", "shop", "-n", ns, "-o", "text", "--server", server, "--kubeconfig", viewer)
		return strings.Count(out, "Deployment "+ns+"/web") == 2
	})
	want := fmt.Sprintf("by argocd-controller (Application %s/shop, revision %s (Running))", ns, second[:12])
	if !strings.Contains(out, want) {
		t.Errorf("history --release shop:\n%s\nwant %q", out, want)
	}
}

// applyKustomization writes what Flux's kustomize-controller writes for
// one reconciliation of Kustomization apps at revision, and the
// ConfigMap it applies between: lastAttemptedRevision with Reconciling
// True first (status, as gotk-kustomize-controller), the ConfigMap by
// server-side apply as kustomize-controller with its labels, then
// lastAppliedRevision and Ready. The controller does not run: these are
// its writes, as its source (v1.7.3) makes them.
func applyKustomization(t *testing.T, ns, revision, level string) {
	t.Helper()
	now := time.Now().UTC().Format(time.RFC3339)
	condition := func(typ, status, reason, message string) string {
		return fmt.Sprintf(`{"type":%q,"status":%q,"reason":%q,"message":%q,"lastTransitionTime":%q,"observedGeneration":1}`, typ, status, reason, message, now)
	}
	reconciling := fmt.Sprintf(`{"status":{"lastAttemptedRevision":%q,"conditions":[%s,%s]}}`, revision,
		condition("Reconciling", "True", "Progressing", "Fetching manifests for revision "+revision),
		condition("Ready", "Unknown", "Progressing", "Reconciliation in progress"))
	kubectl(t, "", "patch", "kustomization", "apps", "-n", ns, "--subresource", "status", "--type", "merge", "--field-manager", "gotk-kustomize-controller", "-p", reconciling)
	configMap := fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: shop-settings
  namespace: %s
  labels: {kustomize.toolkit.fluxcd.io/name: apps, kustomize.toolkit.fluxcd.io/namespace: %s}
data: {level: %q}
`, ns, ns, level)
	kubectl(t, configMap, "apply", "--server-side", "--field-manager", "kustomize-controller", "-f", "-")
	ready := fmt.Sprintf(`{"status":{"lastAppliedRevision":%q,"conditions":[%s]}}`, revision,
		condition("Ready", "True", "ReconciliationSucceeded", "Applied revision: "+revision))
	kubectl(t, "", "patch", "kustomization", "apps", "-n", ns, "--subresource", "status", "--type", "merge", "--field-manager", "gotk-kustomize-controller", "-p", ready)
}

// TestKustomizationNamesItsAppliedRevision: with Flux's real
// Kustomization CRD and its controller's writes made by the test (Flux
// does not run), the records of a ConfigMap a Kustomization applied name
// the Kustomization and the revision each reconciliation applied.
func TestKustomizationNamesItsAppliedRevision(t *testing.T) {
	installReleaseCRDs(t)
	ns := newNamespace(t)
	viewer := releaseViewer(t, ns)
	w := startWatch(t, "-n", ns, "--state-dir", t.TempDir())
	w.logOnFailure()
	ks := fmt.Sprintf(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: %s}
spec:
  interval: 10m
  path: ./apps
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
`, ns)
	kubectl(t, ks, "create", "--field-manager", "kubectl", "-f", "-")
	first, second := "main@sha1:"+sha("4f1c2a9d"), "main@sha1:"+sha("9e8d7c6b")
	applyKustomization(t, ns, first, "one")
	applyKustomization(t, ns, second, "two")
	recs := w.waitRecords("ConfigMap", ns, "shop-settings", 2)
	for i, want := range []string{first, second} {
		r := recs[i].Release
		if r == nil || r.Tool != record.ToolFlux || r.Kind != "Kustomization" || r.Namespace != ns || r.Name != "apps" || r.GitRevision != want {
			t.Errorf("record %d (%s) names release %+v, want Kustomization %s/apps at %s", i, recs[i].Type, r, ns, want)
		}
	}
	server := httpAddress(t, w)
	var out string
	defer func() {
		if t.Failed() {
			t.Logf("history's last answer:\n%s", out)
		}
	}()
	eventually(t, "the Kustomization's records in the history", func() bool {
		out, _ = cliOutput(t, "history", "--release", ns+"/apps", "-n", ns, "-o", "text", "--server", server, "--kubeconfig", viewer)
		return strings.Count(out, "ConfigMap "+ns+"/shop-settings") == 2
	})
	line := fmt.Sprintf("updated ConfigMap %s/shop-settings by kustomize-controller (Kustomization %s/apps, revision main@sha1:%s (Reconciling))", ns, ns, sha("9e8d7c6b")[:12])
	if !strings.Contains(out, line) {
		t.Errorf("history --release %s/apps:\n%s\nwant %q", ns, out, line)
	}
}

package e2e

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubediff/kubediff/internal/toolcopy"
	"github.com/kubediff/kubediff/pkg/record"
)

// installReleaseCRDs installs Argo CD's Application and Flux's
// Kustomization CRDs as their projects ship them, and Flux's HelmRelease
// CRD as helm-controller generates it (testdata/releasecrds, pinned
// there), and waits until the API server serves them.
func installReleaseCRDs(t *testing.T) {
	t.Helper()
	dir := filepath.Join("testdata", "releasecrds")
	for _, file := range []string{"argocd-application-crd.yaml", "kustomize.toolkit.fluxcd.io_kustomizations.yaml", "helm.toolkit.fluxcd.io_helmreleases.yaml"} {
		kubectl(t, "", "apply", "--server-side", "--force-conflicts", "-f", filepath.Join(dir, file))
	}
	kubectl(t, "", "wait", "--for=condition=Established", "--timeout=60s",
		"crd/applications.argoproj.io", "crd/kustomizations.kustomize.toolkit.fluxcd.io", "crd/helmreleases.helm.toolkit.fluxcd.io")
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
	reconciling := fmt.Sprintf(`{"status":{"lastAttemptedRevision":%q,"conditions":[%s,%s]}}`, revision,
		fluxCondition("Reconciling", "True", "Progressing", "Fetching manifests for revision "+revision),
		fluxCondition("Ready", "Unknown", "Progressing", "Reconciliation in progress"))
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
		fluxCondition("Ready", "True", "ReconciliationSucceeded", "Applied revision: "+revision))
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

// helmReleaseStep is one release helm-controller makes of HelmRelease
// web: the Helm revision, the chart's version, the action (install or
// upgrade) and the replicas the chart renders.
type helmReleaseStep struct {
	revision     int
	chartVersion string
	action       string
	replicas     int
}

// releaseHelmRelease writes what Flux's helm-controller writes for the
// last of steps, one release of HelmRelease web (the steps before it are
// its history), in its order: Reconciling with lastAttemptedRevision
// (status, as helm-controller); Helm's release Secret, pending; the
// chart's hook Job (Helm's default before-hook-creation deletes the old
// one first) and its Deployment, as helm-controller with the origin
// labels its post-renderer puts on every rendered object, hooks too
// (Helm v4's combined post-render), the Deployment also with the
// ownership annotations Helm puts on a chart's objects but not on its
// hooks; the Secret deployed (the previous one superseded); then
// status.history with the new release first, and Ready. The controller
// does not run: these are its writes, as its source (v1.6.3, with
// Helm v4) makes them.
func releaseHelmRelease(t *testing.T, ns string, steps []helmReleaseStep) {
	t.Helper()
	step := steps[len(steps)-1]
	running := fmt.Sprintf("Running '%s' action with timeout of 5m0s", step.action)
	reconciling := fmt.Sprintf(`{"status":{"lastAttemptedRevision":%q,"lastAttemptedReleaseAction":%q,"lastAttemptedGeneration":1,"storageNamespace":%q,"helmChart":"%s/%s-web","conditions":[%s,%s]}}`,
		step.chartVersion, step.action, ns, ns, ns,
		fluxCondition("Reconciling", "True", "Progressing", running), fluxCondition("Ready", "Unknown", "Progressing", running))
	patchHelmReleaseStatus(t, ns, reconciling)
	writeHelmReleaseSecret(t, ns, "create", step, "pending-"+step.action)
	origin := fmt.Sprintf("helm.toolkit.fluxcd.io/name: web, helm.toolkit.fluxcd.io/namespace: %s", ns)
	if step.action == "upgrade" {
		kubectl(t, "", "delete", "job", "web-migrate", "-n", ns)
	}
	hook := fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: web-migrate
  namespace: %s
  labels: {%s}
  annotations: {helm.sh/hook: "pre-install,pre-upgrade"}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: "example.com/web-migrate:%s"}]
`, ns, origin, step.chartVersion)
	kubectl(t, hook, "create", "--field-manager", "helm-controller", "-f", "-")
	deployment := fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: %s
  labels: {app.kubernetes.io/managed-by: Helm, %s}
  annotations: {meta.helm.sh/release-name: web, meta.helm.sh/release-namespace: %s}
spec:
  replicas: %d
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "example.com/web:%s"}]}
`, ns, origin, ns, step.replicas, step.chartVersion)
	kubectl(t, deployment, "apply", "--server-side", "--force-conflicts", "--field-manager", "helm-controller", "-f", "-")
	if len(steps) > 1 {
		writeHelmReleaseSecret(t, ns, "replace", steps[len(steps)-2], "superseded")
	}
	writeHelmReleaseSecret(t, ns, "replace", step, "deployed")
	reason := map[string]string{"install": "InstallSucceeded", "upgrade": "UpgradeSucceeded"}[step.action]
	succeeded := fmt.Sprintf("Helm %s succeeded for release %s/web.v%d with chart web@%s", step.action, ns, step.revision, step.chartVersion)
	released := fmt.Sprintf(`{"status":{"observedGeneration":1,"lastAttemptedRevision":%q,"history":%s,"conditions":[%s,%s]}}`,
		step.chartVersion, helmReleaseHistory(ns, steps), fluxCondition("Ready", "True", reason, succeeded), fluxCondition("Released", "True", reason, succeeded))
	patchHelmReleaseStatus(t, ns, released)
}

// fluxCondition is a status condition as Flux's controllers write it.
func fluxCondition(typ, status, reason, message string) string {
	return fmt.Sprintf(`{"type":%q,"status":%q,"reason":%q,"message":%q,"lastTransitionTime":%q,"observedGeneration":1}`,
		typ, status, reason, message, time.Now().UTC().Format(time.RFC3339))
}

// patchHelmReleaseStatus merges status into HelmRelease web's status as
// helm-controller's patch helper does.
func patchHelmReleaseStatus(t *testing.T, ns, status string) {
	t.Helper()
	kubectl(t, "", "patch", "helmrelease", "web", "-n", ns, "--subresource", "status", "--type", "merge", "--field-manager", "helm-controller", "-p", status)
}

// writeHelmReleaseSecret creates or replaces the Secret Helm's storage
// keeps step's revision of release web in, with its labels and the
// release (chart metadata and values) gzipped and base64'd in
// data.release, as Helm writes it for helm-controller.
func writeHelmReleaseSecret(t *testing.T, ns, verb string, step helmReleaseStep, status string) {
	t.Helper()
	release := fmt.Sprintf(`{"name":"web","namespace":%q,"version":%d,"info":{"status":%q},"chart":{"metadata":{"name":"web","version":%q,"appVersion":"2.0"}},"config":{"replicas":%d}}`,
		ns, step.revision, status, step.chartVersion, step.replicas)
	secret := fmt.Sprintf(`apiVersion: v1
kind: Secret
type: helm.sh/release.v1
metadata:
  name: sh.helm.release.v1.web.v%d
  namespace: %s
  labels: {name: web, owner: helm, status: %s, version: "%d"}
data: {release: %s}
`, step.revision, ns, status, step.revision, base64.StdEncoding.EncodeToString([]byte(toolcopy.GzipBase64(release))))
	kubectl(t, secret, verb, "--field-manager", "helm-controller", "-f", "-")
}

// helmReleaseHistory is HelmRelease web's status.history after the last
// of steps: a snapshot of each release, newest first, the older ones
// superseded.
func helmReleaseHistory(ns string, steps []helmReleaseStep) string {
	now := time.Now().UTC().Format(time.RFC3339)
	var snapshots []string
	for i := len(steps) - 1; i >= 0; i-- {
		s, status := steps[i], "superseded"
		if i == len(steps)-1 {
			status = "deployed"
		}
		digest := fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(fmt.Sprint(s))))
		snapshots = append(snapshots, fmt.Sprintf(`{"name":"web","namespace":%q,"version":%d,"status":%q,"action":%q,"chartName":"web","chartVersion":%q,"appVersion":"2.0",
"digest":%q,"configDigest":%q,"firstDeployed":%q,"lastDeployed":%q}`, ns, s.revision, status, s.action, s.chartVersion, digest, digest, now, now))
	}
	return "[" + strings.Join(snapshots, ",") + "]"
}

// TestHelmReleaseNamesItsRelease: with Flux's HelmRelease CRD as
// helm-controller generates it and the controller's writes made by the
// test (Flux does not run), an install and an upgrade of HelmRelease web
// name, on the Deployment's records, the Helm revision and chart being
// applied (its objects carry Helm's annotations as well as Flux's
// labels; Helm's record is the exact one), and on the hook Job's, which
// carries only Flux's labels, the HelmRelease: while it reconciles, the
// chart version it is applying (helm-controller writes the release it
// made to status.history only after Helm's action, so no revision yet),
// and after, the release made, with its chart and Helm revision;
// history --release lists them for a viewer in the namespace.
func TestHelmReleaseNamesItsRelease(t *testing.T) {
	installReleaseCRDs(t)
	ns := newNamespace(t)
	viewer := releaseViewer(t, ns)
	w := startWatch(t, "-n", ns, "--state-dir", t.TempDir())
	w.logOnFailure()
	hr := fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: %s}
spec:
  interval: 10m
  chart:
    spec: {chart: web, version: "1.4.x", sourceRef: {kind: HelmRepository, name: charts}}
`, ns)
	kubectl(t, hr, "create", "--field-manager", "kubectl", "-f", "-")
	steps := []helmReleaseStep{{1, "1.4.1", "install", 1}, {2, "1.4.2", "upgrade", 2}}
	releaseHelmRelease(t, ns, steps[:1])
	releaseHelmRelease(t, ns, steps)
	deployments := w.waitRecords("Deployment", ns, "web", 2)
	for i, status := range []string{"pending-install", "pending-upgrade"} {
		want := record.Release{Tool: record.ToolHelm, Namespace: ns, Name: "web", Revision: i + 1, Status: status, Chart: "web-" + steps[i].chartVersion, AppVersion: "2.0"}
		if r := deployments[i].Release; r == nil || *r != want {
			t.Errorf("Deployment record %d (%s) names release %+v, want %+v", i, deployments[i].Type, r, want)
		}
	}
	waitHelmReleaseRecord(w, ns, "UpgradeSucceeded")
	kubectl(t, "", "label", "job", "web-migrate", "-n", ns, "checked=yes")
	jobs := w.waitRecords("Job", ns, "web-migrate", 4)
	wants := []record.Release{
		{Status: "Reconciling", Chart: "web-1.4.1"},
		{Status: "Reconciling", Chart: "web-1.4.2"}, // Helm deletes the old hook
		{Status: "Reconciling", Chart: "web-1.4.2"},
		{Status: "UpgradeSucceeded", Revision: 2, Chart: "web-1.4.2", AppVersion: "2.0"},
	}
	for i, want := range wants {
		want.Tool, want.Kind, want.Namespace, want.Name = record.ToolFlux, "HelmRelease", ns, "web"
		if r := jobs[i].Release; r == nil || *r != want {
			t.Errorf("hook Job record %d (%s) names release %+v, want %+v", i, jobs[i].Type, r, want)
		}
	}
	server := httpAddress(t, w)
	var out string
	defer func() {
		if t.Failed() {
			t.Logf("history's last answer:\n%s", out)
		}
	}()
	eventually(t, "the HelmRelease's records in the history", func() bool {
		out, _ = cliOutput(t, "history", "--release", ns+"/web", "-n", ns, "-o", "text", "--server", server, "--kubeconfig", viewer)
		return strings.Count(out, "Job "+ns+"/web-migrate") == 4 && strings.Count(out, "Deployment "+ns+"/web ") == 2
	})
	for _, line := range []string{
		fmt.Sprintf("updated Deployment %s/web by helm-controller (release web rev 2, chart web-1.4.2)", ns),
		fmt.Sprintf("added   Job %s/web-migrate by helm-controller (HelmRelease %s/web, chart web-1.4.2 (Reconciling))", ns, ns),
		fmt.Sprintf("updated Job %s/web-migrate by kubectl-label (HelmRelease %s/web, chart web-1.4.2 (UpgradeSucceeded))", ns, ns),
	} {
		if !strings.Contains(out, line) {
			t.Errorf("history --release %s/web:\n%s\nwant %q", ns, out, line)
		}
	}
}

// waitHelmReleaseRecord waits until a record of HelmRelease web shows
// reason in its status: the watch delivered that state, and so the
// release Book holds it, before a write by someone other than the
// controller (which does not wait for the Book) is made.
func waitHelmReleaseRecord(w *run, ns, reason string) {
	w.t.Helper()
	eventually(w.t, "a record of HelmRelease web with "+reason, func() bool {
		for _, c := range w.recordsFor("HelmRelease", ns, "web") {
			if b, _ := json.Marshal(c); strings.Contains(string(b), reason) {
				return true
			}
		}
		return false
	})
}

package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubediff/kubediff/internal/testsync"
	"github.com/kubediff/kubediff/pkg/record"
)

// releaseCanary is a chart value no output may show: Helm keeps the
// values in the release's Secret, which kubediff reads only for its
// chart's name and version.
const releaseCanary = "chart-values-canary-7741"

// writeChart writes a small chart, web at version, whose Deployment and
// ConfigMap follow its values and whose Secret holds a password value.
func writeChart(t *testing.T, dir, version string) string {
	t.Helper()
	files := map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: web\nversion: " + version + "\nappVersion: \"2.0\"\n",
		"values.yaml": "replicas: 1\nlevel: one\npassword: " + releaseCanary + "\n",
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "nginx:1.27"}]}
`,
		"templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-settings}\ndata: {level: {{ .Values.level | quote }}}\n",
		"templates/secret.yaml":    "apiVersion: v1\nkind: Secret\nmetadata: {name: web-login}\nstringData: {password: {{ .Values.password | quote }}}\n",
	}
	testsync.WriteFiles(t, dir, files)
	return dir
}

// helmIn runs Helm against the test control plane.
func helmIn(t *testing.T, ns string, args ...string) {
	t.Helper()
	if out, err := helm(t, append(args, "--namespace", ns, "--kubeconfig", env.Kubeconfig)...); err != nil {
		t.Fatalf("helm %v: %v\n%s", args, err, out)
	}
}

// releaseViewer is a kubeconfig with the token of a ServiceAccount that
// may read every type the release tests write in ns.
func releaseViewer(t *testing.T, ns string) string {
	t.Helper()
	reads := rbacv1.PolicyRule{APIGroups: []string{"", "apps", "batch", "argoproj.io", "kustomize.toolkit.fluxcd.io", "helm.toolkit.fluxcd.io"}, Resources: []string{"*"}, Verbs: []string{"get", "list"}}
	return serviceAccountKubeconfig(t, ns, "release-viewer", reads, ns)
}

// TestHelmUpgradeNamesItsRevisionAndChart: a release installed and
// upgraded with the Helm the project builds names, on every record of
// the objects it applied, the revision Helm was applying and its chart
// (from the release Secret's labels and chart metadata); `history
// --release` lists those records and no others, in text as watch prints
// them; the chart's values (a password) appear nowhere. Helm's own
// release Secrets are not reported unless --show-helm-storage asks, and
// then name Helm as the objects do: helm.
func TestHelmUpgradeNamesItsRevisionAndChart(t *testing.T) {
	ns := newNamespace(t)
	viewer := releaseViewer(t, ns)
	w := startWatch(t, "-n", ns, "--state-dir", t.TempDir())
	w.logOnFailure()
	storage := startWatch(t, "-n", ns, "--show-helm-storage")
	chart := writeChart(t, t.TempDir(), "1.4.1")
	helmIn(t, ns, "install", "web", chart)
	installed := w.waitRecords("Deployment", ns, "web", 1)[0]
	want := record.Release{Tool: "helm", Namespace: ns, Name: "web", Revision: 1, Chart: "web-1.4.1", AppVersion: "2.0"}
	if r := installed.Release; r == nil || r.Revision != want.Revision || r.Chart != want.Chart || r.AppVersion != want.AppVersion || r.Name != "web" {
		t.Fatalf("the install's Deployment record names release %+v, want %+v", r, want)
	}

	writeChart(t, chart, "1.4.2")
	helmIn(t, ns, "upgrade", "web", chart, "--set", "replicas=2", "--set", "level=two", "--set", "password=second-"+releaseCanary)
	upgraded := map[string]record.Change{}
	eventually(t, "the upgrade's records of the Deployment, ConfigMap and Secret", func() bool {
		for _, c := range w.records() {
			if c.Namespace == ns && c.Type == record.Updated && strings.HasPrefix(c.Name, "web") {
				upgraded[c.Kind] = c
			}
		}
		return len(upgraded) == 3
	})
	for kind, c := range upgraded {
		r := c.Release
		if r == nil || r.Tool != "helm" || r.Name != "web" || r.Namespace != ns || r.Revision != 2 || r.Chart != "web-1.4.2" {
			t.Errorf("the upgrade's %s record names release %+v, want web rev 2, chart web-1.4.2", kind, r)
		}
		if c.Manager == nil || c.Manager.Name != "helm" {
			t.Errorf("the upgrade's %s record names manager %+v, want helm", kind, c.Manager)
		}
	}
	for _, c := range storage.waitRecords("Secret", ns, "sh.helm.release.v1.web.v2", 1) {
		if c.Manager == nil || c.Manager.Name != "helm" {
			t.Errorf("with --show-helm-storage, Helm's %s Secret %s names manager %+v, want helm", c.Type, c.Name, c.Manager)
		}
	}
	kubectl(t, "", "create", "configmap", "unrelated", "-n", ns, "--from-literal=k=v")
	w.waitRecords("ConfigMap", ns, "unrelated", 1)
	for _, c := range w.records() {
		if strings.HasPrefix(c.Name, "sh.helm.release.v1.") {
			t.Errorf("Helm's release storage reported by default: %s %s %s", c.Type, c.Kind, c.Name)
		}
	}

	server := httpAddress(t, w)
	var out string
	defer func() {
		if t.Failed() {
			t.Logf("history's last answer:\n%s", out)
		}
	}()
	eventually(t, "the release's records in the history", func() bool {
		out, _ = cliOutput(t, "history", "--release", ns+"/web", "-n", ns, "-o", "text", "--server", server, "--kubeconfig", viewer)
		return strings.Count(out, "by helm (release web rev") == 6
	})
	wantLine := fmt.Sprintf("updated Deployment %s/web by helm (release web rev 2, chart web-1.4.2)", ns)
	if !strings.Contains(out, wantLine) || strings.Contains(out, "unrelated") {
		t.Errorf("history --release %s/web:\n%s\nwant the release's six records (%q among them), not the unrelated ConfigMap", ns, out, wantLine)
	}
	if other, code := cliOutput(t, "history", "--release", "api", "-n", ns, "--server", server, "--kubeconfig", viewer); code != 0 || other != "" {
		t.Errorf("history --release api (exit %d):\n%s", code, other)
	}
	if _, code := cliOutput(t, "history", "--release", "Web App", "-n", ns, "--server", server, "--kubeconfig", viewer); code != 2 {
		t.Errorf("history --release 'Web App': exit %d, want 2 (a usage error)", code)
	}
	if _, metrics := get(t, server+"/metrics"); !strings.Contains(metrics, `kubediff_release_records_total{state="known",tool="helm"} 6`) {
		t.Errorf("/metrics does not count the six records naming a known Helm release:\n%s", grepLines(metrics, "release_records"))
	}
	releaseInMCP(t, server, viewer, ns)
	releaseOnThePage(t, server, viewer, ns)
	for where, text := range map[string]string{"stdout": w.stdout.String(), "stderr": w.stderr.String(), "history": out} {
		if strings.Contains(text, releaseCanary) {
			t.Errorf("the chart's password value appears in %s", where)
		}
	}
}

// releaseInMCP: MCP's list_changes, through the SDK's client, lists the
// release's changes and names the release on each.
func releaseInMCP(t *testing.T, server, viewer, ns string) {
	t.Helper()
	var out struct {
		Changes []struct {
			Kind, Name string
			Release    *record.Release
		}
	}
	callTool(t, mcpSession(t, "--server", server, "--kubeconfig", viewer), "list_changes",
		map[string]any{"namespace": ns, "from": "15m", "release": "web"}, &out)
	revisions := map[int]int{}
	for _, c := range out.Changes {
		if c.Release == nil || c.Release.Name != "web" || strings.Contains(c.Name, "unrelated") {
			t.Errorf("list_changes release=web answers %s %s of release %+v", c.Kind, c.Name, c.Release)
			continue
		}
		revisions[c.Release.Revision]++
	}
	if revisions[1] != 3 || revisions[2] != 3 {
		t.Errorf("list_changes release=web: %d changes of revision 1 and %d of revision 2, want 3 and 3", revisions[1], revisions[2])
	}
}

// releaseOnThePage: the timeline page, filtered by the release, shows
// its six changes and not the unrelated ConfigMap's; the Deployment's
// page names the revision and chart of its upgrade.
func releaseOnThePage(t *testing.T, server, viewer, ns string) {
	t.Helper()
	browser := newBrowser(t)
	page := startUI(t, "--server", server, "--kubeconfig", viewer)
	base := strings.TrimSuffix(page, regexp.MustCompile(`/open\?.*$`).FindString(page))
	inBrowser(t, browser, "open", chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("main")))
	inBrowser(t, browser, "timeline of the release", chromedp.Navigate(base+"/?namespace="+ns+"&release=web"), chromedp.WaitVisible(chromedp.CSS(".legend")))
	if text := mainText(t, browser); !strings.Contains(text, "6 changes") || strings.Contains(text, "unrelated") {
		t.Errorf("the timeline filtered to release web:\n%s", text)
	}
	screenshot(t, browser, "release")
	inBrowser(t, browser, "the Deployment's page", chromedp.Navigate(base+"/?object=deployments.apps/web&namespace="+ns), chromedp.WaitVisible(chromedp.CSS(".record")))
	if text := mainText(t, browser); !strings.Contains(text, "by helm (release web rev 2, chart web-1.4.2)") {
		t.Errorf("the Deployment's page does not name the upgrade's release:\n%s", text)
	}
}

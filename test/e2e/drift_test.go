package e2e

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kubediff/kubediff/pkg/drift"
	"github.com/kubediff/kubediff/pkg/record"
)

// applyAsArgoCD writes Deployment web as Argo CD's application
// controller does when it syncs with server-side apply (the imitation
// of its write: field manager argocd-controller, --force-conflicts, the
// tracking annotation naming Application shop in namespace ns). Argo CD
// does not run here.
func applyAsArgoCD(t *testing.T, ns string) {
	t.Helper()
	deployment := fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: %s
  annotations: {argocd.argoproj.io/tracking-id: "%s_shop:apps/Deployment:%s/web"}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "nginx:1.27"}]}
`, ns, ns, ns)
	kubectl(t, deployment, "apply", "--server-side", "--force-conflicts", "--field-manager", "argocd-controller", "-f", "-")
}

// TestOutsideChangeAndItsSelfHeal: a Deployment Argo CD (imitated)
// applied is scaled with the real `kubectl scale` and its image patched
// by a client writing as kubectl-edit; the records say outside Argo CD
// app shop, with each drifted field's declared value (from Argo CD's
// last write), value before and now. Argo CD's next write puts both
// back: its record says sync and names the first outside record with
// the seconds the drift lasted. An env var added with `kubectl set env`
// is drift too (Argo CD itself does not see it), and Argo CD's
// server-side apply leaves it in place: its next record reverts nothing.
func TestOutsideChangeAndItsSelfHeal(t *testing.T) {
	ns := newNamespace(t)
	w := startWatch(t, "-n", ns)
	w.logOnFailure()
	text := startWatch(t, "-n", ns, "-o", "text", "--color", "never")
	text.logOnFailure()

	applyAsArgoCD(t, ns)
	kubectl(t, "", "-n", ns, "scale", "deployment/web", "--replicas=5")
	w.waitRecords("Deployment", ns, "web", 2) // each its own record, in order
	kubectl(t, "", "-n", ns, "patch", "deployment/web", "--field-manager", "kubectl-edit", "--type", "strategic",
		"-p", `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.28"}]}}}}`)
	w.waitRecords("Deployment", ns, "web", 3)
	applyAsArgoCD(t, ns)
	recs := w.waitRecords("Deployment", ns, "web", 4)

	app := record.GitOps{Tool: record.ToolArgoCD, Kind: "Application", Namespace: ns, Name: "shop"}
	checkVia(t, recs[0], record.ViaSync, app)
	checkVia(t, recs[1], record.ViaOutside, app)
	checkDrift(t, recs[1], "/spec/replicas", "2", "2", "5")
	checkVia(t, recs[2], record.ViaOutside, app)
	checkDrift(t, recs[2], "/spec/template/spec/containers/0/image", `"nginx:1.27"`, `"nginx:1.27"`, `"nginx:1.28"`)
	checkVia(t, recs[3], record.ViaSync, app)
	if g := recs[3].GitOps; g == nil || g.Reverts != recs[1].ID || g.DriftSeconds <= 0 || g.DriftSeconds > deadline.Seconds() {
		t.Errorf("Argo CD's self-heal says %+v, want it to revert %s after some seconds", g, recs[1].ID)
	}

	kubectl(t, "", "-n", ns, "set", "env", "deployment/web", "DEBUG=1")
	recs = w.waitRecords("Deployment", ns, "web", 5)
	checkVia(t, recs[4], record.ViaOutside, app)
	if g := recs[4].GitOps; g == nil || len(g.Drift) != 1 || !g.Drift[0].Undeclared || !strings.Contains(fmt.Sprint(g.Drift[0].Now), "DEBUG") {
		t.Errorf("kubectl set env says %+v, want one drifted field, undeclared, now with DEBUG", g)
	}
	kubectl(t, "", "-n", ns, "annotate", "deployment/web", "note=self-heal-next") // a write that declares nothing
	applyAsArgoCD(t, ns)                                                          // changes nothing: no record
	kubectl(t, "", "-n", ns, "scale", "deployment/web", "--replicas=3")
	recs = w.waitRecords("Deployment", ns, "web", 7)
	if g := recs[5].GitOps; g != nil {
		t.Errorf("an annotation Argo CD does not declare says %+v, want no gitops", g)
	}
	if g := recs[6].GitOps; g == nil || g.Reverts != "" || len(g.Drift) != 1 || g.Drift[0].Path != "/spec/replicas" {
		t.Errorf("scaling while the env var is still drifted says %+v, want outside, spec.replicas only, reverting nothing", g)
	}

	heads := textHeads(t, text, "updated Deployment "+ns+"/web", 3)
	if want := "updated Deployment " + ns + "/web by kubectl-edit — outside Argo CD app " + ns + "/shop"; !strings.HasSuffix(heads[1], want) {
		t.Errorf("text %q, want it to end %q", heads[1], want)
	}
	if want := "— sync by Argo CD app " + ns + "/shop, put back after "; !strings.Contains(heads[2], want) || !strings.Contains(heads[2], recs[1].ID) {
		t.Errorf("text %q, want %q… naming %s", heads[2], want, recs[1].ID)
	}
	if want := "  ≠ spec.replicas: declared 2, was 2, now 5\n"; !strings.Contains(text.stdout.String(), want) {
		t.Errorf("text lacks %q", want)
	}
}

func checkVia(t *testing.T, c record.Change, via string, owner record.GitOps) {
	t.Helper()
	g := c.GitOps
	if g == nil || g.Via != via || g.Tool != owner.Tool || g.Kind != owner.Kind || g.Namespace != owner.Namespace || g.Name != owner.Name {
		t.Errorf("record %s (%s by %+v) says gitops %+v, want via %s of %s", c.ID, c.Changed, c.Manager, g, via, owner.Owner())
	}
}

// checkDrift checks that c drifted exactly at path, with the declared,
// before and now values (JSON), the declared one from Argo CD's last write.
func checkDrift(t *testing.T, c record.Change, path, declared, before, now string) {
	t.Helper()
	g := c.GitOps
	if g == nil || g.DeclaredFrom != record.DeclaredFromSync || len(g.Drift) != 1 {
		t.Errorf("record %s says gitops %+v, want one drifted field declared by the last sync", c.ID, g)
		return
	}
	f := g.Drift[0]
	got := fmt.Sprintf("%s %s %s %s", f.Path, jsonOf(f.Declared), jsonOf(f.Before), jsonOf(f.Now))
	if want := fmt.Sprintf("%s %s %s %s", path, declared, before, now); got != want {
		t.Errorf("record %s drifted %s, want %s", c.ID, got, want)
	}
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// TestDeclaredStateFromLastApplied: a Deployment Argo CD applied
// client-side (its default; imitated: `kubectl apply` as
// argocd-application-controller, which leaves last-applied-configuration)
// before kubediff started is scaled by hand. kubediff never saw Argo CD
// write it, so the declared value comes from the annotation, and the
// record says so.
func TestDeclaredStateFromLastApplied(t *testing.T) {
	ns := newNamespace(t)
	deployment := fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: %s
  labels: {app.kubernetes.io/instance: %s_shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "nginx:1.27"}]}
`, ns, ns)
	kubectl(t, deployment, "apply", "--field-manager", "argocd-application-controller", "-f", "-")
	w := startWatch(t, "-n", ns)
	w.logOnFailure()
	kubectl(t, "", "-n", ns, "scale", "deployment/web", "--replicas=4")
	c := w.waitRecords("Deployment", ns, "web", 1)[0]
	checkVia(t, c, record.ViaOutside, record.GitOps{Tool: record.ToolArgoCD, Kind: "Application", Namespace: ns, Name: "shop"})
	if g := c.GitOps; g == nil || g.DeclaredFrom != record.DeclaredFromLastApplied || len(g.Drift) != 1 ||
		jsonOf(g.Drift[0].Declared) != "2" || jsonOf(g.Drift[0].Now) != "4" {
		t.Errorf("record says %s, want spec.replicas declared 2 (from last-applied), now 4", jsonOf(g))
	}
}

// TestDeclaredStateFromAHelmManifest: a chart installed with the real
// Helm before kubediff starts (so kubediff never sees Helm write its
// objects), a ConfigMap from its values and a Secret holding a password
// from them: the ConfigMap patched with the real kubectl says outside
// Helm release web, the value the release's manifest declares beside
// the value now (declaredFrom manifest); the password is nowhere in
// kubediff's output.
func TestDeclaredStateFromAHelmManifest(t *testing.T) {
	const password = "manifest-canary-0451"
	ns := newNamespace(t)
	chart := t.TempDir()
	for name, text := range map[string]string{
		"Chart.yaml":              "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"values.yaml":             "greeting: hello\npassword: " + password + "\n",
		"templates/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  greeting: {{ .Values.greeting | quote }}\n  retries: \"3\"\n",
		"templates/creds.yaml":    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  password: {{ .Values.password | quote }}\n",
	} {
		path := filepath.Join(chart, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := helm(t, "install", "web", chart, "--namespace", ns, "--kubeconfig", env.Kubeconfig); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	w := startWatch(t, "-n", ns)
	w.logOnFailure()
	kubectl(t, "", "-n", ns, "patch", "configmap", "settings", "--type", "merge", "-p", `{"data":{"greeting":"hi"}}`)
	c := w.waitRecords("ConfigMap", ns, "settings", 1)[0]
	checkVia(t, c, record.ViaOutside, record.GitOps{Tool: record.ToolHelm, Namespace: ns, Name: "web"})
	if g := c.GitOps; g == nil || g.DeclaredFrom != record.DeclaredFromManifest || len(g.Drift) != 1 ||
		jsonOf(g.Drift[0].Declared) != `"hello"` || jsonOf(g.Drift[0].Now) != `"hi"` {
		t.Errorf("record says %s, want data.greeting declared \"hello\" (from the manifest), now \"hi\"", jsonOf(c.GitOps))
	}
	if out := w.stdout.String() + w.stderr.String(); strings.Contains(out, password) {
		t.Errorf("the chart's password is in kubediff's output:\n%s", out)
	}
}

// TestArgoCDIgnoreDifferencesIsNotDrift: with Argo CD's real Application
// CRD, an Application whose ignoreDifferences names spec.replicas of
// Deployments (as a team with an autoscaler writes it): scaling the
// Deployment it applied (imitated) is not drift, a new image is.
func TestArgoCDIgnoreDifferencesIsNotDrift(t *testing.T) {
	installReleaseCRDs(t)
	ns := newNamespace(t)
	w := startWatch(t, "-n", ns)
	w.logOnFailure()
	app := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: shop, namespace: %s}
spec:
  project: default
  source: {repoURL: "https://git.example.com/shop.git", path: deploy, targetRevision: main}
  destination: {server: "https://kubernetes.default.svc", namespace: %s}
  ignoreDifferences: [{group: apps, kind: Deployment, jsonPointers: [/spec/replicas]}]
`, ns, ns)
	kubectl(t, app, "create", "--field-manager", "argocd-server", "-f", "-")
	w.waitRecords("Application", ns, "shop", 1)
	applyAsArgoCD(t, ns)
	kubectl(t, "", "-n", ns, "scale", "deployment/web", "--replicas=5")
	w.waitRecords("Deployment", ns, "web", 2)
	kubectl(t, "", "-n", ns, "set", "image", "deployment/web", "web=nginx:1.28")
	recs := w.waitRecords("Deployment", ns, "web", 3)
	if g := recs[1].GitOps; g != nil {
		t.Errorf("a scale Argo CD ignores says %s, want no gitops", jsonOf(g))
	}
	checkVia(t, recs[2], record.ViaOutside, record.GitOps{Tool: record.ToolArgoCD, Kind: "Application", Namespace: ns, Name: "shop"})
}

// TestDriftCommandAndMetricFollowTheSelfHeal: after an outside `kubectl
// scale` of a Deployment Argo CD (imitated) applied, `kubediff drift`
// (reading the running kubediff's state dir) lists it under its
// Application with the declared and current replicas, `history --drift`
// lists the outside record, and kubediff_drift_open counts it; after the
// imitated self-heal, drift lists nothing, --since lists it as put back,
// and the metric is 0.
func TestDriftCommandAndMetricFollowTheSelfHeal(t *testing.T) {
	ns := newNamespace(t)
	dir := filepath.Join(t.TempDir(), "state")
	w := startWatch(t, "-n", ns, "--state-dir", dir)
	w.logOnFailure()
	applyAsArgoCD(t, ns)
	kubectl(t, "", "-n", ns, "scale", "deployment/web", "--replicas=5")
	outside := w.waitRecords("Deployment", ns, "web", 2)[1]
	owner := "argocd:Application/" + ns + "/shop"
	metric := regexp.MustCompile(`kubediff_drift_open\{[^}]*namespace="` + ns + `",owner="` + regexp.QuoteMeta(owner) + `"\} (\d+)\n`)
	openNow := func() string {
		_, body := get(t, httpAddress(t, w)+"/metrics")
		if m := metric.FindStringSubmatch(body); m != nil {
			return m[1]
		}
		return "none"
	}
	// The history is written by the state dir's flush, once a second.
	var out string
	eventually(t, "kubediff drift to list web", func() bool {
		out, _ = cliOutput(t, "drift", "-n", ns, "--state-dir", dir, "-o", "json")
		return strings.Contains(out, `"name":"web"`)
	})
	groups := driftGroups(t, out)
	if len(groups) != 1 || groups[0].Owner.Name != "shop" || len(groups[0].Drifted) != 1 || groups[0].Drifted[0].Record != outside.ID {
		t.Fatalf("drift: %s, want Deployment web under Application shop, drifted by %s", out, outside.ID)
	}
	if f := groups[0].Drifted[0].Fields; len(f) != 1 || f[0].Field != "spec.replicas" || jsonOf(f[0].Declared) != "2" || jsonOf(f[0].Now) != "5" {
		t.Errorf("drifted fields %s, want spec.replicas declared 2, now 5", jsonOf(f))
	}
	if text, _ := cliOutput(t, "drift", "-n", ns, "--state-dir", dir, "-o", "text"); !strings.Contains(text, "Argo CD app "+ns+"/shop\n  Deployment "+ns+"/web, drifted since ") ||
		!strings.Contains(text, "    ≠ spec.replicas: declared 2, now 5\n") {
		t.Errorf("drift -o text:\n%s", text)
	}
	if hist, _ := cliOutput(t, "history", "-n", ns, "--drift", "--state-dir", dir); strings.Count(hist, "\n") != 1 || !strings.Contains(hist, outside.ID) {
		t.Errorf("history --drift: want the outside record alone:\n%s", hist)
	}
	if got := openNow(); got != "1" {
		t.Errorf("kubediff_drift_open = %s, want 1", got)
	}

	applyAsArgoCD(t, ns) // the self-heal
	heal := w.waitRecords("Deployment", ns, "web", 3)[2]
	if heal.GitOps == nil || heal.GitOps.Reverts != outside.ID {
		t.Fatalf("the self-heal says %s, want it to revert %s", jsonOf(heal.GitOps), outside.ID)
	}
	eventually(t, "kubediff drift to list nothing", func() bool {
		out, _ = cliOutput(t, "drift", "-n", ns, "--state-dir", dir, "-o", "json")
		return out == ""
	})
	if got := openNow(); got != "0" {
		t.Errorf("after the self-heal kubediff_drift_open = %s, want 0", got)
	}
	out, _ = cliOutput(t, "drift", "-n", ns, "--since", "10m", "--state-dir", dir, "-o", "json")
	if groups := driftGroups(t, out); len(groups) != 1 || len(groups[0].Drifted) != 0 || len(groups[0].PutBack) != 1 || groups[0].PutBack[0].EndedBy != heal.ID {
		t.Errorf("drift --since 10m: %s, want web put back by %s", out, heal.ID)
	}
	driftOnThePage(t, ns, dir)
}

// driftOnThePage: the timeline marks the outside change and the write
// that put it back, and says how many of each; the Deployment's page
// says who owns it, what drifted from the declared value, and when it
// was put back.
func driftOnThePage(t *testing.T, ns, dir string) {
	t.Helper()
	browser := newBrowser(t)
	page := startUI(t, "--state-dir", dir)
	base := strings.TrimSuffix(page, regexp.MustCompile(`/open\?.*$`).FindString(page))
	inBrowser(t, browser, "the way in", chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(".legend")))
	inBrowser(t, browser, "the timeline", chromedp.Navigate(base+"/?namespace="+ns+"&from=30m"),
		chromedp.WaitVisible(chromedp.CSS(".mark.outside")), chromedp.WaitVisible(chromedp.CSS(".mark.reverts")))
	if text := mainText(t, browser); !strings.Contains(text, "outside GitOps (1)") || !strings.Contains(text, "put back (1)") {
		t.Errorf("the timeline's legend:\n%s", text)
	}
	screenshot(t, browser, "drift-timeline")
	inBrowser(t, browser, "the Deployment's page", chromedp.Navigate(base+"/?object=deployments.apps/web&namespace="+ns), chromedp.WaitVisible(chromedp.CSS(".record.outside")))
	text := mainText(t, browser)
	for _, want := range []string{"outside Argo CD app " + ns + "/shop", "spec.replicas: declared 2, was 2, now 5", "sync by Argo CD app " + ns + "/shop, put back after"} {
		if !strings.Contains(text, want) {
			t.Errorf("the Deployment's page lacks %q:\n%s", want, text)
		}
	}
	screenshot(t, browser, "drift-object")
}

// driftGroup is a line of `kubediff drift -o json`.
type driftGroup struct {
	Owner   record.GitOps `json:"owner"`
	Drifted []drift.Drift `json:"drifted"`
	PutBack []drift.Drift `json:"putBack"`
}

func driftGroups(t *testing.T, out string) []driftGroup {
	t.Helper()
	var groups []driftGroup
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var g driftGroup
		if err := json.Unmarshal([]byte(line), &g); err != nil {
			t.Fatalf("kubediff drift printed %q: %v", out, err)
		}
		groups = append(groups, g)
	}
	return groups
}

// TestDriftRuleReachesAWebhook: with the pack's drift-outside-gitops on
// and a team's webhook routed by it, the outside `kubectl scale` of an
// Argo CD-owned Deployment (its controller's writes imitated) reaches
// the webhook, naming the rule and the drift; the imitated sync that
// put it back does not.
func TestDriftRuleReachesAWebhook(t *testing.T) {
	ns := newNamespace(t)
	hook := &webhookReceiver{}
	srv := httptest.NewServer(hook)
	defer srv.Close()
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	config := "rulePack: [drift-outside-gitops]\nsinks:\n  - name: team\n    type: webhook\n    url: " + srv.URL + "/hook\n    match:\n      rules: [drift-outside-gitops]\n"
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	w := startBinary(t, "watch", "-n", ns, "--config", cfg)
	w.logOnFailure()
	applyAsArgoCD(t, ns)
	kubectl(t, "", "-n", ns, "scale", "deployment/web", "--replicas=5")
	w.waitRecords("Deployment", ns, "web", 2)
	applyAsArgoCD(t, ns) // the self-heal
	w.waitRecords("Deployment", ns, "web", 3)
	eventually(t, "the outside change at the webhook", func() bool { return len(hook.records()) >= 1 })
	kubectl(t, "", "-n", ns, "create", "configmap", "last", "--from-literal=k=v")
	w.waitRecords("ConfigMap", ns, "last", 1) // what was to reach the webhook did
	got := hook.records()
	if len(got) != 1 || got[0].GitOps == nil || got[0].GitOps.Via != record.ViaOutside || !slices.Equal(got[0].Rules, []string{"drift-outside-gitops"}) {
		t.Fatalf("the webhook got %s, want the outside change alone, naming drift-outside-gitops", jsonOf(got))
	}
	if d := got[0].GitOps.Drift; len(d) != 1 || d[0].Field != "spec.replicas" {
		t.Errorf("the webhook's record names the drift %s, want spec.replicas", jsonOf(d))
	}
}

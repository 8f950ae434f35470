package e2e

import (
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubediff/kubediff/pkg/record"
)

// rulesConfig is an operator's rule file: three rules of their own and
// two of the pack, and a webhook for the team routed by rule (not
// replicas-to-zero, which only stdout shows).
const rulesConfig = `
rules:
  - name: image-changed-here
    when: 'record.namespace == "%[1]s" && record.changes.exists(c, c.field.endsWith(".image"))'
    severity: warning
    summary: '{{ .kind }} {{ .name }} now runs {{ (index .object.spec.template.spec.containers 0).image }}'
  - name: cm-mode-unsafe
    when: 'record.kind == "ConfigMap" && has(object.data.mode) && object.data.mode == "unsafe"'
    severity: critical
  - name: scratch-is-noise
    when: 'record.kind == "ConfigMap" && record.name.startsWith("scratch-")'
    drop: true
rulePack: [replicas-to-zero, workload-deleted]
sinks:
  - name: team
    type: webhook
    url: %[2]s/hook
    match:
      rules: [image-changed-here, cm-*, workload-deleted]
`

// TestRulesNameRecordsAndRouteThemToASink is the rules issue's check, as
// an operator would try it: with a rule file of five rules, only the
// records that matched a rule the webhook is routed by reach it, each
// naming its rules; stdout shows every record with what the rules said;
// a drop rule's records reach no one; /metrics counts changes and
// matches.
func TestRulesNameRecordsAndRouteThemToASink(t *testing.T) {
	ns := newNamespace(t)
	hook := &webhookReceiver{}
	srv := httptest.NewServer(hook)
	defer srv.Close()
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, rulesConfig, ns, srv.URL), 0o600); err != nil {
		t.Fatal(err)
	}
	w := startBinary(t, "watch", "-n", ns, "--config", cfg)
	w.logOnFailure()

	kubectl(t, `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: `+ns+`}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "nginx:1.27"}]}
`, "apply", "-f", "-")
	kubectl(t, "", "-n", ns, "create", "configmap", "settings", "--from-literal=mode=safe")
	kubectl(t, "", "-n", ns, "create", "configmap", "scratch-1", "--from-literal=k=v")
	kubectl(t, "", "-n", ns, "set", "image", "deployment/web", "web=nginx:1.28")
	kubectl(t, "", "-n", ns, "scale", "deployment/web", "--replicas=0")
	kubectl(t, "", "-n", ns, "patch", "configmap", "settings", "-p", `{"data":{"mode":"unsafe"}}`)
	kubectl(t, "", "-n", ns, "patch", "configmap", "scratch-1", "-p", `{"data":{"k":"w"}}`)
	kubectl(t, "", "-n", ns, "delete", "deployment", "web")
	kubectl(t, "", "-n", ns, "create", "configmap", "last", "--from-literal=k=v")

	w.waitRecords("ConfigMap", ns, "last", 1) // every record before it is out too
	eventually(t, "3 records at the webhook", func() bool { return len(hook.records()) >= 3 })

	want := map[string][]string{
		"updated Deployment web":     {"image-changed-here"},
		"updated ConfigMap settings": {"cm-mode-unsafe"},
		"deleted Deployment web":     {"workload-deleted"},
	}
	var got []string
	for _, c := range hook.records() {
		key := c.Type + " " + c.Kind + " " + c.Name
		got = append(got, key)
		if rules, ok := want[key]; !ok || !slices.Equal(c.Rules, rules) {
			t.Errorf("the webhook got %s naming rules %v, want only records naming %v", key, c.Rules, want)
		}
	}
	if len(got) != 3 {
		t.Errorf("the webhook got %v, want the 3 records routed by rule", got)
	}
	checkRulesOnStdout(t, w, ns)

	_, metrics := get(t, httpAddress(t, w)+"/metrics")
	for _, line := range []string{
		`kubediff_rule_matches_total{cluster="envtest",rule="replicas-to-zero",severity="warning"} 1`,
		`kubediff_rule_matches_total{cluster="envtest",rule="cm-mode-unsafe",severity="critical"} 1`,
		`kubediff_rule_matches_total{cluster="envtest",rule="scratch-is-noise",severity="info"} 2`,
		`kubediff_changes_total{cluster="envtest",namespace="` + ns + `",resource="configmaps",severity="critical",type="updated"} 1`,
		`kubediff_changes_total{cluster="envtest",namespace="` + ns + `",resource="deployments",severity="",type="added"} 1`,
	} {
		if !strings.Contains(metrics, line+"\n") {
			t.Errorf("/metrics lacks %s:\n%s", line, grepLines(metrics, "kubediff_rule|kubediff_changes"))
		}
	}
}

// checkRulesOnStdout checks what stdout got: every record but the dropped
// ones, each with what the rules said of it.
func checkRulesOnStdout(t *testing.T, w *run, ns string) {
	t.Helper()
	var scaled, image *record.Change
	for _, c := range w.records() {
		switch {
		case strings.HasPrefix(c.Name, "scratch-"):
			t.Errorf("stdout got %s ConfigMap %s, which a drop rule matched", c.Type, c.Name)
		case c.Kind == "Deployment" && c.Changed == "spec.replicas":
			scaled = &c
		case c.Kind == "Deployment" && strings.HasSuffix(c.Changed, ".image"):
			image = &c
		case c.Kind == "ConfigMap" && c.Name == "last" && len(c.Rules) > 0:
			t.Errorf("a record no rule matches names rules %v", c.Rules)
		}
	}
	if scaled == nil || !slices.Equal(scaled.Rules, []string{"replicas-to-zero"}) || scaled.Severity != "warning" ||
		scaled.Summary != "Deployment "+ns+"/web scaled to zero" {
		t.Errorf("the scale to zero on stdout: %+v", scaled)
	}
	if image == nil || image.Severity != "warning" || image.Summary != "Deployment web now runs nginx:1.28" {
		t.Errorf("the image change on stdout: %+v", image)
	}
}

// A rule that does not compile stops kubediff at start, exit 2, with one
// line naming the rule, the config file and CEL's error.
func TestABadRuleStopsTheStartNamingIt(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(`
rules:
  - name: fine
    when: 'record.type == "deleted"'
  - name: prod-images
    when: 'record.namespace.startsWith("prod-") && record.chnages.exists(c, c.field.endsWith(".image"))'
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(kubediff, "watch", "--kubeconfig", env.Kubeconfig, "--config", cfg, "--http-address", "127.0.0.1:0")
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 2 {
		t.Fatalf("exit %d, want 2; output:\n%s", code, out)
	}
	msg := strings.TrimSpace(string(out))
	for _, want := range []string{cfg, "rules[prod-images].when", "undefined field 'chnages'"} {
		if !strings.Contains(msg, want) || strings.Count(msg, "\n") > 0 {
			t.Errorf("output %q, want one line naming %q", msg, want)
		}
	}
}

// A rule that does not compile in a reloaded config file is refused with
// one log line naming it, and the running rules go on naming records.
func TestABadRuleAtReloadKeepsTheRunningRules(t *testing.T) {
	ns := newNamespace(t)
	cfgFile := filepath.Join(t.TempDir(), "config.yaml")
	write := func(s string) {
		if err := os.WriteFile(cfgFile+".tmp", []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(cfgFile+".tmp", cfgFile); err != nil {
			t.Fatal(err)
		}
	}
	const good = "rules:\n  - name: marked\n    when: 'record.name.startsWith(\"marked-\")'\n    severity: warning\n"
	write("namespaces: [" + ns + "]\n" + good)
	w := startWatch(t, "--config", cfgFile)
	w.logOnFailure()
	kubectl(t, "", "-n", ns, "create", "configmap", "marked-1")
	if c := w.waitRecords("ConfigMap", ns, "marked-1", 1)[0]; !slices.Equal(c.Rules, []string{"marked"}) {
		t.Fatalf("before the reload: rules %v", c.Rules)
	}

	write("namespaces: [" + ns + "]\n" + good + "  - name: broken\n    when: 'record.nme == \"x\"'\n")
	eventually(t, "the bad rule to be refused", func() bool {
		return strings.Contains(w.stderr.String(), "keeping the running config")
	})
	for _, line := range strings.Split(w.stderr.String(), "\n") {
		if strings.Contains(line, "keeping the running config") && !strings.Contains(line, "rules[broken].when: 1:7: undefined field 'nme'") {
			t.Errorf("the refusal does not name the rule and CEL's error: %s", line)
		}
	}
	kubectl(t, "", "-n", ns, "create", "configmap", "marked-2")
	if c := w.waitRecords("ConfigMap", ns, "marked-2", 1)[0]; !slices.Equal(c.Rules, []string{"marked"}) {
		t.Errorf("after the refused reload: rules %v, want the running rule's", c.Rules)
	}
}

// TestRulesOnThePage: the timeline page shows what the rules said of
// each change (a ring of its severity's colour, the rules in its title),
// filters by rule and severity through the API, and an object's page
// names each record's rules, severity and summary; in a browser. MCP's
// list_changes, through the SDK's client, filters and names them too.
func TestRulesOnThePage(t *testing.T) {
	ns := newNamespace(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(`
rules:
  - name: cm-flagged
    when: 'record.kind == "ConfigMap" && has(object.data.flag)'
    severity: warning
  - name: cm-unsafe
    when: 'record.kind == "ConfigMap" && has(object.data.mode) && object.data.mode == "unsafe"'
    severity: critical
    summary: 'ConfigMap {{ .name }} runs unsafe'
`), 0o600); err != nil {
		t.Fatal(err)
	}
	w := startBinary(t, "watch", "-n", ns, "--config", cfg, "--state-dir", filepath.Join(t.TempDir(), "state"))
	w.logOnFailure()
	kubectl(t, "", "-n", ns, "create", "configmap", "plain", "--from-literal=k=v")
	kubectl(t, "", "-n", ns, "create", "configmap", "flagged", "--from-literal=flag=1")
	kubectl(t, "", "-n", ns, "create", "configmap", "unsafe", "--from-literal=flag=1", "--from-literal=mode=unsafe")
	w.waitRecords("ConfigMap", ns, "unsafe", 1)

	// A reviewer who may read ConfigMaps there (the history checks it).
	reviewer := serviceAccountKubeconfig(t, ns, "reviewer",
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}, ns)
	browser := newBrowser(t)
	page := startUI(t, "--server", httpAddress(t, w), "--kubeconfig", reviewer)
	base := strings.TrimSuffix(page, page[strings.Index(page, "/open?"):])
	inBrowser(t, browser, "sign in", chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(".legend")))
	for _, tc := range []struct {
		query string
		marks []string // each mark's ConfigMap, and what its title ends with
	}{
		{"", []string{"plain", "kubectl-create", "flagged", "[warning: cm-flagged]", "unsafe", "[critical: cm-flagged, cm-unsafe]"}},
		{"&severity=critical", []string{"unsafe", "[critical: cm-flagged, cm-unsafe]"}},
		{"&rule=cm-f*", []string{"flagged", "[warning: cm-flagged]", "unsafe", "[critical: cm-flagged, cm-unsafe]"}},
		{"&rule=cm-unsafe&severity=warning", []string{"unsafe", "[critical: cm-flagged, cm-unsafe]"}},
	} {
		inBrowser(t, browser, "timeline "+tc.query, chromedp.Navigate(base+"/?namespace="+ns+tc.query), chromedp.WaitVisible(chromedp.CSS(".legend")))
		marks := browserValue(t, browser, "the marks", chromedp.Evaluate[[]string](
			`[...document.querySelectorAll(".mark")].map((m) => m.className + " | " + m.title)`))
		if len(marks) != len(tc.marks)/2 {
			t.Errorf("?%s: marks %q, want %d", tc.query, marks, len(tc.marks)/2)
			continue
		}
		for i := 0; i < len(tc.marks); i += 2 {
			name, ends := tc.marks[i], tc.marks[i+1]
			if !slices.ContainsFunc(marks, func(m string) bool { return strings.Contains(m, "ConfigMap "+name+" ") && strings.HasSuffix(m, ends) }) {
				t.Errorf("?%s: no mark of %s ending %q in %q", tc.query, name, ends, marks)
			}
		}
		if tc.query == "" && !slices.ContainsFunc(marks, func(m string) bool { return strings.HasPrefix(m, "mark added severity-critical |") }) {
			t.Errorf("no mark ringed critical: %q", marks)
		}
	}
	if sel := browserValue(t, browser, "the severity filter", chromedp.Value(chromedp.CSS(`#filters select[name="severity"]`))); sel != "warning" {
		t.Errorf("the severity filter shows %q, want warning", sel)
	}
	screenshot(t, browser, "rules-filter")

	inBrowser(t, browser, "object page", chromedp.Navigate(base+"/?object=configmaps/unsafe&namespace="+ns), chromedp.WaitVisible(chromedp.CSS(".record .severity")))
	text := mainText(t, browser)
	for _, want := range []string{"[critical: cm-flagged, cm-unsafe]", "ConfigMap unsafe runs unsafe"} {
		if !strings.Contains(text, want) {
			t.Errorf("the object page lacks %q:\n%s", want, text)
		}
	}
	screenshot(t, browser, "rules-object")

	var out struct {
		Changes []struct {
			Name, Severity, Summary string
			Rules                   []string
		}
	}
	callTool(t, mcpSession(t, "--server", httpAddress(t, w), "--kubeconfig", reviewer), "list_changes",
		map[string]any{"namespace": ns, "from": "15m", "rule": "cm-*", "severity": "critical"}, &out)
	if c := out.Changes; len(c) != 1 || c[0].Name != "unsafe" || c[0].Severity != "critical" ||
		!slices.Equal(c[0].Rules, []string{"cm-flagged", "cm-unsafe"}) || c[0].Summary != "ConfigMap unsafe runs unsafe" {
		t.Errorf("MCP list_changes rule=cm-* severity=critical: %+v, want unsafe's record alone, with its rules, severity and summary", c)
	}
}

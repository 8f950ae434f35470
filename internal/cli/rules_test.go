package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kubediff/kubediff/pkg/rules"
)

// `kubediff rules` lists the config's rules and every rule of the pack,
// saying which are on and where each comes from, in text and in JSON.
func TestRulesCommandListsConfiguredAndPackRules(t *testing.T) {
	file := writeFile(t, `rules:
- name: prod-images
  when: 'record.namespace.startsWith("prod-") && record.changes.exists(c, c.field.endsWith(".image"))'
  severity: warning
- name: ci-noise
  when: 'has(record.user) && record.user.name == "ci"'
  drop: true
rulePack: [node-cordoned, {name: secret-deleted, namespaces: ["prod-*"], severity: critical}]
`)
	run := func(args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := Run(context.Background(), append([]string{"rules", "--config", file}, args...), &stdout, &stderr); code != 0 {
			t.Fatalf("kubediff rules %v: exit %d: %s", args, code, stderr.String())
		}
		return stdout.String()
	}
	var list ruleList
	if err := json.Unmarshal([]byte(run("-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	got := map[string]namingRule{}
	for _, r := range list.Rules {
		got[r.Name] = r
	}
	if len(list.Rules) != 2+len(rules.PackNames()) || len(list.QuietRules) == 0 {
		t.Errorf("listed %d rules and %d quiet ones, want the 2 configured, the %d of the pack, and the quiet ones",
			len(list.Rules), len(list.QuietRules), len(rules.PackNames()))
	}
	for name, want := range map[string]namingRule{
		"prod-images":    {Severity: "warning", Enabled: true, Source: file},
		"ci-noise":       {Severity: "info", Enabled: true, Source: file, Drop: true},
		"node-cordoned":  {Severity: "info", Enabled: true, Source: "pack"},
		"secret-deleted": {Severity: "critical", Enabled: true, Source: "pack"},
		"crd-deleted":    {Severity: "critical", Enabled: false, Source: "pack"},
	} {
		r := got[name]
		if r.Severity != want.Severity || r.Enabled != want.Enabled || r.Source != want.Source || r.Drop != want.Drop || r.When == "" {
			t.Errorf("%s: %+v, want %+v and its expression", name, r, want)
		}
	}
	if ns := got["secret-deleted"].Namespaces; len(ns) != 1 || ns[0] != "prod-*" {
		t.Errorf("secret-deleted's namespaces: %v", ns)
	}
	text := run()
	for _, want := range []string{"secret-deleted  ", "critical  yes  pack, in prod-*", "crd-deleted", "no   pack",
		file + ", drops", "podLifecycle"} {
		if !strings.Contains(text, want) {
			t.Errorf("the text lacks %q:\n%s", want, text)
		}
	}
	var stderr bytes.Buffer
	if code := Run(context.Background(), []string{"rules", "-o", "yaml"}, &bytes.Buffer{}, &stderr); code != exitUsage {
		t.Errorf("-o yaml: exit %d, want %d; %s", code, exitUsage, stderr.String())
	}
}

package stdout

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/notify/notifytest"
	"github.com/kubediff/kubediff/pkg/record"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

var at = record.Timestamp(time.Date(2026, 11, 22, 10, 4, 5, 123000000, time.UTC))

// records cover each record type and each kind of field change.
var records = []record.Change{
	{Time: at, Type: "added", APIVersion: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "prod", Name: "settings", UID: "5f0c-1", ResourceVersion: "101"},
	{Time: at, Type: "updated", APIVersion: "apps/v1", Kind: "Deployment", Resource: "deployments", Namespace: "prod", Name: "web", UID: "9a1b-2", ResourceVersion: "102",
		User: &record.User{Name: "system:serviceaccount:prod:deployer", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:prod", "system:authenticated"},
			ServiceAccount: &record.ServiceAccount{Namespace: "prod", Name: "deployer"}},
		Changed: "spec.replicas, spec.template.spec.containers[0].image, metadata.labels[\"app.kubernetes.io/version\"]",
		Changes: []record.FieldChange{
			{Op: record.OpReplace, Path: "/spec/replicas", Field: "spec.replicas", From: int64(1), To: int64(3)},
			{Op: record.OpReplace, Path: "/spec/template/spec/containers/0/image", Field: "spec.template.spec.containers[0].image", From: "nginx:1.27", To: "nginx:1.28"},
			{Op: record.OpAdd, Path: "/metadata/labels/app.kubernetes.io~1version", Field: `metadata.labels["app.kubernetes.io/version"]`, To: "1.28"},
			{Op: record.OpRemove, Path: "/spec/paused", Field: "spec.paused", From: false},
			{Op: record.OpReplace, Path: "/data/big", Field: "data.big", From: strings.Repeat("a", 200), To: "line1\nline2"},
		}},
	{Time: at, Type: "updated", APIVersion: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "prod", Name: "settings", UID: "5f0c-1", ResourceVersion: "104",
		Changed: "data.mode", Manager: &record.Manager{Name: "kubectl-edit", Operation: "Update", Time: "2026-11-22T10:04:05Z"},
		User:    &record.User{Name: "alice", Groups: []string{"dev", "system:authenticated"}},
		Changes: []record.FieldChange{{Op: record.OpReplace, Path: "/data/mode", Field: "data.mode", From: "fast", To: "safe"}},
		Unified: "--- ConfigMap prod/settings (old)\n+++ ConfigMap prod/settings (new)\n@@ -1,5 +1,5 @@\n apiVersion: v1\n data:\n-  mode: fast\n+  mode: safe\n kind: ConfigMap\n metadata:\n"},
	// A config file with one line changed, a long one (only excerpts
	// carried) with a line that ends it without a newline and hunks cut
	// short, and a long single-line value.
	{Time: at, Type: "updated", APIVersion: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "prod", Name: "proxy", UID: "5f0c-4", ResourceVersion: "105",
		Changed: `data["nginx.conf"], data["big.txt"], binaryData.blob`, Manager: &record.Manager{Name: "kubectl-edit", Operation: "Update"},
		Changes: []record.FieldChange{
			{Op: record.OpReplace, Path: "/data/nginx.conf", Field: `data["nginx.conf"]`,
				From: "server {\n  listen 80;\n  location /app0 {\n    proxy_pass http://app0:8080;\n  }\n…", To: "server {\n  listen 80;\n  location /app0 {\n    proxy_pass http://app0:8080;\n  }\n…",
				Lines: &record.LineDiff{FromLines: 33, ToLines: 33, Hunks: []record.Hunk{{FromLine: 16, FromCount: 7, ToLine: 16, ToCount: 7, Lines: []string{
					"      proxy_pass http://app4:8080;", "    }", "    location /app5 {", "-     proxy_pass http://app5:8080;", "+     proxy_pass http://app5:8081;", "    }", "    location /app6 {", "      proxy_pass http://app6:8080;",
				}}}}},
			{Op: record.OpReplace, Path: "/data/big.txt", Field: `data["big.txt"]`, From: "…line 1\nline 2\n…", To: "…line 1\nLINE 2\n…",
				Truncated: true, FromBytes: ptr(1 << 20), ToBytes: ptr(1<<20 + 1), FromSHA256: "0123456789abcdef", ToSHA256: "fedcba9876543210",
				Lines: &record.LineDiff{FromLines: 27000, ToLines: 27001, Truncated: true, Hunks: []record.Hunk{
					{FromLine: 1, FromCount: 3, ToLine: 1, ToCount: 3, Lines: []string{"  line 1", "- line 2", "+ LINE 2", "  line 3"}},
					{FromLine: 27000, FromCount: 1, ToLine: 27000, ToCount: 2, Lines: []string{"- last\x1b[2J", `\ no newline at end`, "+ last\x1b[2J", "+ \tmore"}},
				}}},
			{Op: record.OpAdd, Path: "/binaryData/blob", Field: "binaryData.blob", To: "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo…",
				Truncated: true, ToBytes: ptr(3 << 20), ToSHA256: "00112233aabbccdd"},
		}},
	{Time: at, Type: "deleted", APIVersion: "stable.example.com/v1", Kind: "CronTab", Resource: "crontabs", Name: "cluster-wide", UID: "77-3", LastSeenResourceVersion: "103", AfterGap: true},
	// RBAC changes say what access they gave or took away, under the
	// header, before the fields.
	{Time: at, Type: "added", APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding", Resource: "clusterrolebindings", Name: "x", UID: "b-5", ResourceVersion: "106",
		Access: []string{"alice gains cluster-admin through ClusterRoleBinding x"}},
	{Time: at, Type: "updated", APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role", Resource: "roles", Namespace: "dev", Name: "reader", UID: "r-6", ResourceVersion: "107",
		Changed: "rules[0].resources[1], rules[0].verbs[1]",
		Changes: []record.FieldChange{
			{Op: record.OpAdd, Path: "/rules/0/resources/1", Field: "rules[0].resources[1]", To: "secrets"},
			{Op: record.OpRemove, Path: "/rules/0/verbs/1", Field: "rules[0].verbs[1]", From: "list"},
		},
		Access: []string{"Role dev/reader now grants get, watch on secrets in dev", "Role dev/reader no longer grants list on configmaps in dev"}},
}

func ptr(n int) *int { return &n }

func TestGolden(t *testing.T) {
	for _, tt := range []struct {
		file string
		sink func(*bytes.Buffer) *Sink
	}{
		{"records.jsonl", func(b *bytes.Buffer) *Sink { return NewJSON(b) }},
		{"records.txt", func(b *bytes.Buffer) *Sink { return NewText(b, false) }},
		{"records.color.txt", func(b *bytes.Buffer) *Sink { return NewText(b, true) }},
	} {
		t.Run(tt.file, func(t *testing.T) {
			var buf bytes.Buffer
			s := tt.sink(&buf)
			for _, c := range records {
				if err := s.Notify(context.Background(), c); err != nil {
					t.Fatal(err)
				}
			}
			notifytest.Golden(t, tt.file, buf.Bytes(), *update)
		})
	}
}

func TestJSONIsOneObjectPerLineWithTheDocumentedFields(t *testing.T) {
	var buf bytes.Buffer
	s := NewJSON(&buf)
	for _, c := range records {
		_ = s.Notify(context.Background(), c)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != len(records) {
		t.Fatalf("%d lines for %d records", len(lines), len(records))
	}
	for i, line := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %d is not JSON: %v", i, err)
		}
		for _, key := range []string{"time", "type", "apiVersion", "kind", "resource", "namespace", "name", "uid", "resourceVersion"} {
			if _, ok := m[key]; !ok {
				t.Errorf("line %d lacks %q: %s", i, key, line)
			}
		}
		if records[i].Type == "updated" {
			if _, ok := m["changed"].(string); !ok {
				t.Errorf("update record lacks the string field changed: %s", line)
			}
			changes, _ := m["changes"].([]any)
			if len(changes) != len(records[i].Changes) {
				t.Errorf("update record has %d changes, want %d", len(changes), len(records[i].Changes))
			}
		}
	}
}

func TestTextWithoutColorHasNoEscapes(t *testing.T) {
	var buf bytes.Buffer
	s := NewText(&buf, false)
	for _, c := range records {
		_ = s.Notify(context.Background(), c)
	}
	if strings.Contains(buf.String(), "\x1b") {
		t.Fatal("uncoloured text output contains escape sequences")
	}
}

// A record the rules named says so on its first line, with its severity,
// and the summary of the most severe rule under it.
func TestTextNamesTheRulesTheRecordMatched(t *testing.T) {
	var buf bytes.Buffer
	c := records[1]
	c.Rules, c.Severity, c.Summary = []string{"image-changed-in-prod", "prod-team"}, "warning", "Deployment prod/web: image now nginx:1.28"
	if err := NewText(&buf, false).Notify(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(buf.String(), "\n")
	if !strings.HasSuffix(lines[0], " [warning: image-changed-in-prod, prod-team]") {
		t.Errorf("first line %q does not end with the rules", lines[0])
	}
	if lines[1] != "  » Deployment prod/web: image now nginx:1.28" {
		t.Errorf("second line %q, want the summary", lines[1])
	}
}

// An outside change says so after who made it, and each drifted field
// with its declared value; a sync that put it back says after how long.
func TestTextSaysOutsideAndPutBack(t *testing.T) {
	outside := record.Change{Time: at, Type: "updated", APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web", UID: "u", ResourceVersion: "7",
		User: &record.User{Name: "alice"}, Manager: &record.Manager{Name: "kubectl-edit"},
		Changes: []record.FieldChange{{Op: record.OpReplace, Path: "/spec/replicas", Field: "spec.replicas", From: int64(2), To: int64(5)}},
		GitOps: &record.GitOps{Via: record.ViaOutside, Tool: record.ToolArgoCD, Kind: "Application", Name: "shop", DeclaredFrom: record.DeclaredFromSync,
			Drift: []record.DriftedField{{Path: "/spec/replicas", Field: "spec.replicas", Declared: int64(2), Before: int64(2), Now: int64(5)}}}}
	sync := record.Change{Time: at, Type: "updated", APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web", UID: "u", ResourceVersion: "8",
		Manager: &record.Manager{Name: "argocd-controller"},
		Changes: []record.FieldChange{{Op: record.OpReplace, Path: "/spec/replicas", Field: "spec.replicas", From: int64(5), To: int64(2)}},
		GitOps:  &record.GitOps{Via: record.ViaSync, Tool: record.ToolArgoCD, Kind: "Application", Name: "shop", Reverts: "u/7/updated", DriftSeconds: 2.25}}
	var buf bytes.Buffer
	s := NewText(&buf, false)
	for _, c := range []record.Change{outside, sync} {
		if err := s.Notify(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{
		"updated Deployment shop/web by alice (kubectl-edit) — outside Argo CD app shop\n  ≠ spec.replicas: declared 2, was 2, now 5\n",
		"updated Deployment shop/web by argocd-controller — sync by Argo CD app shop, put back after 2.2s (u/7/updated)\n",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text:\n%s\nlacks %q", buf.String(), want)
		}
	}
}

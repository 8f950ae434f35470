package historymcp

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/history/historyapi"
	"github.com/kubediff/kubediff/pkg/journal"
	"github.com/kubediff/kubediff/pkg/record"
)

var deployments = change.Resource{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
	Kind: "Deployment", Namespaced: true, Singular: "deployment", ShortNames: []string{"deploy"}}

// scaled is a kept record of shop/NAME scaled to replicas at minute past
// at, by user (nil: no identity source said).
func scaled(at time.Time, minute int, name string, replicas int64, user *record.User) journal.Entry {
	obj := func(n int64) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "spec": map[string]any{"replicas": n}}}
		u.SetNamespace("shop")
		u.SetName(name)
		return u
	}
	c := record.Change{Time: record.Timestamp(at.Add(time.Duration(minute) * time.Minute)), Type: record.Updated, APIVersion: "apps/v1",
		Kind: "Deployment", Resource: "deployments", Namespace: "shop", Name: name, UID: "uid-" + name, ResourceVersion: fmt.Sprint(minute),
		Changed: "spec.replicas", Changes: []record.FieldChange{{Op: record.OpReplace, Path: "/spec/replicas", Field: "spec.replicas", From: replicas - 1, To: replicas}},
		Manager: &record.Manager{Name: "kubectl", Operation: "Update", Subresource: "scale"}, User: user}
	c.ID = c.StableID()
	return journal.Entry{Resource: deployments, Change: c, Old: obj(replicas - 1), New: obj(replicas)}
}

func session(t *testing.T, src historyapi.Source, now time.Time) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	serverSide, clientSide := mcp.NewInMemoryTransports()
	serverSession, err := NewServer(Options{Source: src, Version: "test", Now: func() time.Time { return now }}).Connect(ctx, serverSide, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { serverSession.Close() })
	s, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, clientSide, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func call(t *testing.T, s *mcp.ClientSession, name string, args map[string]any, out any) {
	t.Helper()
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s %v: tool error: %v", name, args, res.Content)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %v: %s", name, err, b)
	}
}

// TestToolsFilterAndNameTheUser: list_changes and object_changes, asked
// through the SDK's client for one user's changes, answer exactly that
// user's, and every change names its user where one is known.
func TestToolsFilterAndNameTheUser(t *testing.T) {
	at := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	alice := &record.User{Name: "alice", Groups: []string{"dev"}}
	deployer := &record.User{Name: "system:serviceaccount:ci:deployer", ServiceAccount: &record.ServiceAccount{Namespace: "ci", Name: "deployer"}}
	entries := []journal.Entry{scaled(at, 1, "web", 5, alice), scaled(at, 2, "web", 6, deployer), scaled(at, 3, "api", 2, nil),
		scaled(at, 4, "api", 3, alice), scaled(at, 5, "web", 7, nil)}
	s := session(t, keptHistory(t, at, entries), at.Add(10*time.Minute))

	summary := func(changes []entry) string {
		var out []string
		for _, e := range changes {
			out = append(out, e.Name+"@"+e.Time[14:16]+" by "+e.User)
		}
		return fmt.Sprint(out)
	}
	for args, want := range map[string]string{
		"":                                  "[web@01 by alice web@02 by system:serviceaccount:ci:deployer api@03 by  api@04 by alice web@05 by ]",
		"alice":                             "[web@01 by alice api@04 by alice]",
		"system:serviceaccount:ci:deployer": "[web@02 by system:serviceaccount:ci:deployer]",
		"ali":                               "[]",
	} {
		var out listOutput
		call(t, s, "list_changes", map[string]any{"namespace": "shop", "user": args}, &out)
		if got := summary(out.Changes); got != want {
			t.Errorf("list_changes user=%q: %s, want %s", args, got, want)
		}
	}

	var changes objectChangesOutput
	call(t, s, "object_changes", map[string]any{"type": "deploy", "name": "web", "namespace": "shop", "user": "alice"}, &changes)
	if len(changes.Changes) != 1 || changes.Changes[0].User != "alice" || changes.Changes[0].By != "kubectl" {
		t.Errorf("object_changes of web by alice: %+v, want the one scale by alice with kubectl", changes.Changes)
	}
	call(t, s, "object_changes", map[string]any{"type": "deploy", "name": "web", "namespace": "shop"}, &changes)
	if len(changes.Changes) != 3 || changes.Changes[1].User != "system:serviceaccount:ci:deployer" || changes.Changes[2].User != "" {
		t.Errorf("object_changes of web: %+v, want 3, the second by the ServiceAccount, the last by no one known", changes.Changes)
	}
}

// TestListChangesFiltersAndNamesTheRules: list_changes, asked through the
// SDK's client for a rule (a name or a glob) or a severity, answers the
// records the rules named, each with its rules, severity, summary and
// access sentences; a severity that is none is refused.
func TestListChangesFiltersAndNamesTheRules(t *testing.T) {
	at := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	judged := func(e journal.Entry, severity string, rules ...string) journal.Entry {
		e.Change.Rules, e.Change.Severity = rules, severity
		return e
	}
	db := judged(scaled(at, 3, "db", 0, nil), "critical", "replicas-to-zero", "prod-db")
	db.Change.Summary, db.Change.Access = "Deployment shop/db scaled to zero", []string{"alice gains cluster-admin through ClusterRoleBinding x"}
	entries := []journal.Entry{judged(scaled(at, 1, "web", 0, nil), "warning", "replicas-to-zero"), scaled(at, 2, "api", 2, nil), db}
	s := session(t, keptHistory(t, at, entries), at.Add(10*time.Minute))
	summary := func(changes []entry) string {
		var out []string
		for _, e := range changes {
			out = append(out, fmt.Sprintf("%s%v:%s", e.Name, e.Rules, e.Severity))
		}
		return fmt.Sprint(out)
	}
	for args, want := range map[[2]string]string{
		{"", ""}:                        "[web[replicas-to-zero]:warning api[]: db[replicas-to-zero prod-db]:critical]",
		{"replicas-*", ""}:              "[web[replicas-to-zero]:warning db[replicas-to-zero prod-db]:critical]",
		{"prod-db", ""}:                 "[db[replicas-to-zero prod-db]:critical]",
		{"", "critical"}:                "[db[replicas-to-zero prod-db]:critical]",
		{"replicas-to-zero", "warning"}: "[web[replicas-to-zero]:warning db[replicas-to-zero prod-db]:critical]",
	} {
		var out listOutput
		call(t, s, "list_changes", map[string]any{"namespace": "shop", "rule": args[0], "severity": args[1]}, &out)
		if got := summary(out.Changes); got != want {
			t.Errorf("list_changes rule=%q severity=%q: %s, want %s", args[0], args[1], got, want)
		}
		if last := out.Changes[len(out.Changes)-1]; last.Summary != db.Change.Summary || !slices.Equal(last.Access, db.Change.Access) {
			t.Errorf("list_changes rule=%q severity=%q: db's summary %q, access %q", args[0], args[1], last.Summary, last.Access)
		}
	}
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_changes", Arguments: map[string]any{"severity": "urgent"}})
	if err != nil || !res.IsError {
		t.Errorf("severity urgent: %v %+v, want a tool error", err, res)
	}
}

// keptHistory is a history of Deployments holding entries, written at at.
func keptHistory(t *testing.T, at time.Time, entries []journal.Entry) historyapi.Local {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "h.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Update(func(tx *bolt.Tx) error {
		if err := history.Write(tx, entries, history.Policy{Retention: 24 * time.Hour, MaxBytes: 1 << 30}, at); err != nil {
			return err
		}
		return history.WriteTypes(tx, []change.Resource{deployments})
	}); err != nil {
		t.Fatal(err)
	}
	return historyapi.Local{Reader: history.NewReader(db, nil)}
}

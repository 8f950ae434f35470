package pipeline

import (
	"slices"
	"testing"

	"github.com/kubediff/kubediff/pkg/metrics/metricstest"
	"github.com/kubediff/kubediff/pkg/rules"
)

// Rules name the records they match, with the highest severity, on what
// the sinks get and on what the history keeps; a drop rule's records
// reach no sink, but the history still moves the object to its new state.
func TestJudgeNamesRulesAndDropRulesKeepOnlyTheState(t *testing.T) {
	set, err := rules.Compile([]rules.Spec{
		{Name: "k-changed", Severity: rules.Warning, When: `record.changes.exists(c, c.path == "/data/k" && c.to == "v2")`},
		{Name: "scratch-is-noise", Drop: true, When: `record.namespace == "scratch"`},
		{Name: "any-configmap", When: `record.kind == "ConfigMap"`},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := &keeper{}
	got, m := runPipeline(t, Options{Rules: set, History: k},
		update("prod", "v1", "v2"), update("scratch", "v1", "v2"), update("dev", "v1", "v3"))
	if len(got) != 2 || got[0].Namespace != "prod" || got[1].Namespace != "dev" {
		t.Fatalf("sinks got %+v, want prod's and dev's records (scratch's dropped)", got)
	}
	if !slices.Equal(got[0].Rules, []string{"k-changed", "any-configmap"}) || got[0].Severity != "warning" {
		t.Errorf("prod's record: rules %v severity %q, want [k-changed any-configmap] warning", got[0].Rules, got[0].Severity)
	}
	if !slices.Equal(got[1].Rules, []string{"any-configmap"}) || got[1].Severity != "info" {
		t.Errorf("dev's record: rules %v severity %q, want [any-configmap] info", got[1].Rules, got[1].Severity)
	}
	if len(k.entries) != 3 {
		t.Fatalf("history got %d entries, want 3", len(k.entries))
	}
	if e := k.entries[0]; e.StateOnly || !slices.Equal(e.Change.Rules, got[0].Rules) || e.Change.Severity != "warning" {
		t.Errorf("history's prod entry %+v, want the record with its rules", e.Change)
	}
	if e := k.entries[1]; !e.StateOnly || e.Change.Namespace != "scratch" || e.New.GetResourceVersion() != "2" {
		t.Errorf("history's scratch entry: state only %v, %s at %s; want scratch's new state without a record", e.StateOnly, e.Change.Namespace, e.New.GetResourceVersion())
	}
	for _, c := range []struct {
		rule, severity string
		want           float64
	}{{"k-changed", "warning", 2}, {"scratch-is-noise", "info", 1}, {"any-configmap", "info", 3}} {
		if n := metricstest.Value(t, m.Registry, "kubediff_rule_matches_total", "cluster", "", "rule", c.rule, "severity", c.severity); n != c.want {
			t.Errorf("kubediff_rule_matches_total{rule=%q} = %v, want %v", c.rule, n, c.want)
		}
	}
	for ns, severity := range map[string]string{"prod": "warning", "scratch": "warning", "dev": "info"} {
		if n := metricstest.Value(t, m.Registry, "kubediff_changes_total", "cluster", "", "resource", "configmaps", "type", "updated", "namespace", ns, "severity", severity); n != 1 {
			t.Errorf("kubediff_changes_total{namespace=%q,severity=%q} = %v, want 1", ns, severity, n)
		}
	}
}

package record

import (
	"fmt"
	"testing"
)

func TestCondenseConditions(t *testing.T) {
	changes := []FieldChange{
		{Op: OpReplace, Path: "/spec/replicas", Field: "spec.replicas", From: 1, To: 3},
		{Op: OpReplace, Path: "/status/conditions/0/lastTransitionTime", Field: "status.conditions[type=Available].lastTransitionTime", From: "t1", To: "t2"},
		{Op: OpReplace, Path: "/status/conditions/0/reason", Field: "status.conditions[type=Available].reason", From: "MinimumReplicasUnavailable", To: "MinimumReplicasAvailable"},
		{Op: OpReplace, Path: "/status/conditions/0/status", Field: "status.conditions[type=Available].status", From: "False", To: "True"},
		{Op: OpAdd, Path: "/status/conditions/1", Field: "status.conditions[type=Ready]", To: map[string]any{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}},
	}
	got := CondenseConditions(changes)
	want := []string{
		"replace spec.replicas 1 → 3",
		"replace status.conditions[type=Available] False → True (MinimumReplicasAvailable)",
		"add status.conditions[type=Ready] <nil> → False (KubeletNotReady)",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d changes, want %d: %+v", len(got), len(want), got)
	}
	for i, fc := range got {
		if s := fmt.Sprintf("%s %s %v → %v", fc.Op, fc.Field, fc.From, fc.To); s != want[i] {
			t.Errorf("change %d = %q, want %q", i, s, want[i])
		}
	}
	list := CondenseConditions([]FieldChange{{Op: OpAdd, Path: "/status/conditions", Field: "status.conditions", To: []any{
		map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
		map[string]any{"type": "Progressing", "status": "True"}}}})
	if list[0].To != "Available=True (MinimumReplicasAvailable), Progressing=True" {
		t.Fatalf("list = %v", list[0].To)
	}
}

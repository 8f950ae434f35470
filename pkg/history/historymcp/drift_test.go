package historymcp

import (
	"fmt"
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/journal"
	"github.com/kubediff/kubediff/pkg/record"
)

// TestListChangesFiltersOnDrift: list_changes with drift answers, through
// the SDK's client, the change made outside the GitOps owner and the
// write that put it back, each with its gitops (the drifted field's
// declared value, the record it reverts), and not the owner's other
// writes nor changes of objects it does not own.
func TestListChangesFiltersOnDrift(t *testing.T) {
	at := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	owner := record.GitOps{Tool: record.ToolArgoCD, Kind: "Application", Namespace: "argocd", Name: "shop"}
	via := func(e journal.Entry, g record.GitOps) journal.Entry { e.Change.GitOps = &g; return e }
	sync, outside, back := owner, owner, owner
	sync.Via = record.ViaSync
	outside.Via, outside.DeclaredFrom = record.ViaOutside, record.DeclaredFromSync
	outside.Drift = []record.DriftedField{{Path: "/spec/replicas", Field: "spec.replicas", Declared: 4, Before: 4, Now: 5}}
	edit := scaled(at, 2, "web", 5, &record.User{Name: "alice"})
	back.Via, back.Reverts, back.DriftSeconds = record.ViaSync, edit.Change.ID, 60
	entries := []journal.Entry{via(scaled(at, 1, "web", 4, nil), sync), via(edit, outside), via(scaled(at, 3, "web", 4, nil), back),
		scaled(at, 4, "api", 2, nil)}
	s := session(t, keptHistory(t, at, entries), at.Add(10*time.Minute))
	for drift, want := range map[bool]string{
		true:  "[web@02 outside spec.replicas declared 4 web@03 sync reverts " + edit.Change.ID + "]",
		false: "[web@01 sync web@02 outside spec.replicas declared 4 web@03 sync reverts " + edit.Change.ID + " api@04 -]",
	} {
		var out listOutput
		call(t, s, "list_changes", map[string]any{"namespace": "shop", "drift": drift}, &out)
		var got []string
		for _, e := range out.Changes {
			s := e.Name + "@" + e.Time[14:16] + " -"
			if g := e.GitOps; g != nil {
				s = e.Name + "@" + e.Time[14:16] + " " + g.Via
				for _, f := range g.Drift {
					s += fmt.Sprintf(" %s declared %v", f.Field, f.Declared)
				}
				if g.Reverts != "" {
					s += " reverts " + g.Reverts
				}
			}
			got = append(got, s)
		}
		if fmt.Sprint(got) != want {
			t.Errorf("list_changes drift=%v: %v, want %s", drift, got, want)
		}
	}
}

package historymcp

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kubediff/kubediff/pkg/journal"
	"github.com/kubediff/kubediff/pkg/record"
)

// TestToolsFilterAndNameTheRelease: list_changes, asked through the
// SDK's client for one release's changes (by name or namespace/name),
// answers exactly those, and every change, there and in object_changes,
// names its release; a release that cannot be a name is refused.
func TestToolsFilterAndNameTheRelease(t *testing.T) {
	at := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	of := func(e journal.Entry, r *record.Release) journal.Entry { e.Change.Release = r; return e }
	web := &record.Release{Tool: record.ToolHelm, Namespace: "shop", Name: "web", Revision: 7, Chart: "web-1.4.2"}
	app := &record.Release{Tool: record.ToolArgoCD, Kind: "Application", Namespace: "argocd", Name: "api", GitRevision: "4f1c2a9"}
	entries := []journal.Entry{of(scaled(at, 1, "web", 5, nil), web), scaled(at, 2, "web", 6, nil), of(scaled(at, 3, "api", 2, nil), app)}
	s := session(t, keptHistory(t, at, entries), at.Add(10*time.Minute))
	summary := func(changes []entry) string {
		var out []string
		for _, e := range changes {
			name := "-"
			if e.Release != nil {
				name = e.Release.String()
			}
			out = append(out, e.Name+"@"+e.Time[14:16]+" "+name)
		}
		return fmt.Sprint(out)
	}
	for release, want := range map[string]string{
		"":         "[web@01 release web rev 7, chart web-1.4.2 web@02 - api@03 Application argocd/api, revision 4f1c2a9]",
		"web":      "[web@01 release web rev 7, chart web-1.4.2]",
		"shop/web": "[web@01 release web rev 7, chart web-1.4.2]",
		"api":      "[api@03 Application argocd/api, revision 4f1c2a9]",
		"shop/api": "[]",
	} {
		var out listOutput
		call(t, s, "list_changes", map[string]any{"namespace": "shop", "release": release}, &out)
		if got := summary(out.Changes); got != want {
			t.Errorf("list_changes release=%q: %s, want %s", release, got, want)
		}
	}
	var changes objectChangesOutput
	call(t, s, "object_changes", map[string]any{"type": "deploy", "name": "web", "namespace": "shop"}, &changes)
	if len(changes.Changes) != 2 || changes.Changes[0].Release == nil || changes.Changes[0].Release.Revision != 7 || changes.Changes[1].Release != nil {
		t.Errorf("object_changes of web: %+v, want 2, the first of release web rev 7", changes.Changes)
	}
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_changes", Arguments: map[string]any{"release": "Web App"}})
	if err != nil || !res.IsError {
		t.Errorf("release \"Web App\": %v %+v, want a tool error", err, res)
	}
}

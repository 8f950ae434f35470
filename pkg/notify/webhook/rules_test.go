package webhook

import (
	"strings"
	"testing"

	"github.com/kubediff/kubediff/pkg/record"
)

// In the chat presets, a record the rules named leads its title with
// its severity and rules, and its summary follows who made it.
func TestChatSectionNamesTheRulesMatched(t *testing.T) {
	c := record.Change{Type: record.Updated, APIVersion: "apps/v1", Kind: "Deployment", Namespace: "prod", Name: "web",
		Manager: &record.Manager{Name: "kubectl-set"}, Rules: []string{"image-changed"}, Severity: "warning",
		Summary: "web now runs nginx:1.28"}
	s := recordSection(c)
	if s.Title != "[warning: image-changed] updated Deployment prod/web" {
		t.Errorf("title %q", s.Title)
	}
	if !strings.HasSuffix(s.Detail, "by kubectl-set — web now runs nginx:1.28") {
		t.Errorf("detail %q", s.Detail)
	}
}

package webhook

import (
	"testing"

	"github.com/kubediff/kubediff/pkg/record"
)

// In the chat presets, a record names the release its object belongs
// to after who made it, as text output does.
func TestChatSectionNamesTheRelease(t *testing.T) {
	c := record.Change{Type: record.Updated, APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web",
		Manager: &record.Manager{Name: "helm"}, Release: &record.Release{Tool: "helm", Namespace: "shop", Name: "web", Revision: 7, Chart: "web-1.4.2"}}
	if s := recordSection(c); s.Detail != "apps/v1 by helm (release web rev 7, chart web-1.4.2)" {
		t.Errorf("detail %q", s.Detail)
	}
}

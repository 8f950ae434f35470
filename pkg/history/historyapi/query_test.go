package historyapi

import (
	"testing"

	"github.com/kubediff/kubediff/pkg/history"
)

func TestSelectorsRoundTrip(t *testing.T) {
	for _, s := range []string{"configmaps", "deployments.apps/web", "certificates.cert-manager.io", "nodes/n1"} {
		sel, err := ParseSelector(s)
		if err != nil || FormatSelector(sel) != s {
			t.Errorf("%q → %+v, %v → %q", s, sel, err, FormatSelector(sel))
		}
	}
	if sel, _ := ParseSelector("deployments.apps/web"); sel != (history.Selector{Group: "apps", Resource: "deployments", Name: "web"}) {
		t.Errorf("deployments.apps/web = %+v", sel)
	}
	for _, bad := range []string{"", "/web", "a/b/c"} {
		if _, err := ParseSelector(bad); err == nil {
			t.Errorf("ParseSelector(%q) accepted", bad)
		}
	}
}

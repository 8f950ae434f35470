package historyapi

import (
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/history"
)

func TestParseMoment(t *testing.T) {
	now := time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2026-11-23T13:01:30.123456789Z": time.Date(2026, 11, 23, 13, 1, 30, 123456789, time.UTC),
		"2026-11-23T15:01:30+01:00":      time.Date(2026, 11, 23, 14, 1, 30, 0, time.UTC),
		"15m":                            now.Add(-15 * time.Minute),
		"0s":                             now,
	} {
		if got, err := ParseMoment(in, now); err != nil || !got.Equal(want) {
			t.Errorf("ParseMoment(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "yesterday", "-5m", "2026-11-23"} {
		if _, err := ParseMoment(bad, now); err == nil {
			t.Errorf("ParseMoment(%q) accepted", bad)
		}
	}
}

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

package glob

import "testing"

func TestMatchAny(t *testing.T) {
	tests := []struct {
		patterns []string
		name     string
		want     bool
	}{
		{[]string{"prod-*"}, "prod-eu", true},
		{[]string{"prod-*"}, "dev", false},
		{[]string{"dev", "team-?"}, "team-a", true},
		{[]string{"team-?"}, "team-ab", false},
		{nil, "anything", false},
		{[]string{"[bad"}, "[bad", false},
	}
	for _, tt := range tests {
		if got := MatchAny(tt.patterns, tt.name); got != tt.want {
			t.Errorf("MatchAny(%q, %q) = %v, want %v", tt.patterns, tt.name, got, tt.want)
		}
	}
	if Valid([]string{"ok-*", "[bad"}) == nil {
		t.Error("Valid accepted a malformed pattern")
	}
}

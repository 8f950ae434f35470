package config

import (
	"strings"
	"testing"

	"github.com/kubediff/kubediff/pkg/rules"
)

// A sink routed by rule names rules that exist (a name or a glob), so a
// misspelt rule is an error at start, not a sink that never gets a record.
func TestSinkMatchNamesRulesThatExist(t *testing.T) {
	tests := []struct {
		name      string
		match     MatchConfig
		wantError string // empty: valid
	}{
		{name: "a rule of the config", match: MatchConfig{Rules: []string{"prod-images"}}},
		{name: "a pack rule enabled", match: MatchConfig{Rules: []string{"workload-deleted"}}},
		{name: "a glob", match: MatchConfig{Rules: []string{"prod-*"}, Severity: "warning"}},
		{name: "a misspelt rule", match: MatchConfig{Rules: []string{"prod-image"}},
			wantError: `sinks[teams].match.rules: "prod-image" names no rule (rules and rulePack have prod-images, workload-deleted)`},
		{name: "a pack rule not enabled", match: MatchConfig{Rules: []string{"image-changed"}},
			wantError: `sinks[teams].match.rules: "image-changed" names no rule`},
		{name: "an unknown severity", match: MatchConfig{Severity: "high"},
			wantError: `sinks[teams].match.severity: "high" is not one of info, warning, critical`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			c.Rules = []rules.Spec{{Name: "prod-images", When: `record.namespace.startsWith("prod-")`}}
			c.RulePack = rules.PackNamed("workload-deleted")
			c.Sinks = []SinkEntry{{Name: "teams", Type: "webhook", Match: tt.match, Options: map[string]any{"url": "http://127.0.0.1:1/"}}}
			err := c.Validate()
			switch {
			case tt.wantError == "" && err != nil:
				t.Fatalf("Validate() = %v, want no error", err)
			case tt.wantError != "" && (err == nil || !strings.Contains(err.Error(), tt.wantError)):
				t.Fatalf("Validate() = %v, want an error saying %q", err, tt.wantError)
			}
		})
	}
}

// A rule that does not compile is named, with CEL's error, on one line.
func TestABrokenRuleIsAConfigError(t *testing.T) {
	c := Default()
	c.Rules = []rules.Spec{{Name: "prod-images", When: `record.namespace.startsWith("prod-") && record.chnages.size() > 0`}}
	err := c.Validate()
	if err == nil || err.Error() != "rules[prod-images].when: 1:47: undefined field 'chnages'" {
		t.Fatalf("Validate() = %v", err)
	}
}

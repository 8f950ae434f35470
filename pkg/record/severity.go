package record

import (
	"slices"
	"strings"
)

// Severities of the rules a record matched (docs/rules.md).
const (
	SeverityInfo     = "info"
	SeverityWarning  = "warning"
	SeverityCritical = "critical"
)

// Severities lists the severities, lowest first.
var Severities = []string{SeverityInfo, SeverityWarning, SeverityCritical}

// SeverityRank orders severities: 0 for none, then 1 for info, 2 for
// warning, 3 for critical; -1 for a word that is none of them.
func SeverityRank(s string) int {
	if s == "" {
		return 0
	}
	if i := slices.Index(Severities, s); i >= 0 {
		return i + 1
	}
	return -1
}

// Judgement says what the rules said of the record for people: its
// severity and the rules it matched ("warning: image-changed-in-prod,
// shop-team"), or "" when it matched none.
func (c Change) Judgement() string {
	if len(c.Rules) == 0 {
		return ""
	}
	return c.Severity + ": " + strings.Join(c.Rules, ", ")
}

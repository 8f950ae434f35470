package record

import "slices"

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

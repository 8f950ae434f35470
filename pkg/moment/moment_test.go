package moment

import (
	"strings"
	"testing"
	"time"
)

// Every flag, the API, the page and MCP read times alike: days as well
// as hours, RFC 3339, now; anything else is refused, naming the forms.
func TestOneGrammarForTimes(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"7d":                        now.Add(-7 * 24 * time.Hour),
		"1.5d":                      now.Add(-36 * time.Hour),
		"36h":                       now.Add(-36 * time.Hour),
		"15m":                       now.Add(-15 * time.Minute),
		"0":                         now,
		"now":                       now,
		"2026-11-23T14:02:00Z":      time.Date(2026, 11, 23, 14, 2, 0, 0, time.UTC),
		"2026-11-23T14:02:00.5123Z": time.Date(2026, 11, 23, 14, 2, 0, 512300000, time.UTC),
		"2026-11-23T15:02:00+01:00": time.Date(2026, 11, 23, 14, 2, 0, 0, time.UTC),
	} {
		got, err := Parse(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("Parse(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "7", "-1h", "-2d", "yesterday", "7 days", "2026-11-23"} {
		if _, err := Parse(bad, now); err == nil || !strings.Contains(err.Error(), "7d") {
			t.Errorf("Parse(%q): err %v, want one naming the forms", bad, err)
		}
	}
}

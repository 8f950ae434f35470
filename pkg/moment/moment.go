// Package moment reads the times people give kubediff: a length of time
// (90m, 36h, 7d) and a moment (RFC 3339, a length of time ago, now). One
// grammar for every flag, the HTTP API, the page and MCP, so that what
// one accepts the others do.
package moment

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseAge reads a length of time as Go writes durations (90m, 36h) or
// as a number of days (7d); "0" is zero.
func ParseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a number of days such as 7d", s)
		}
		return time.Duration(n * float64(24*time.Hour)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a length of time such as 7d, 36h or 90m", s)
	}
	return d, nil
}

// Parse reads a moment: RFC 3339 (fractional seconds allowed), a length
// of time before now (15m, 36h, 7d), or "now".
func Parse(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if strings.TrimSpace(s) == "now" {
		return now, nil
	}
	if d, err := ParseAge(s); err == nil {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time (2026-11-23T14:02:00Z), a length of time ago (15m, 36h, 7d) nor now", s)
}

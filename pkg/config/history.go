package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Bounds returns the history's retention and size bound; either zero
// means history is off.
func (h HistoryConfig) Bounds() (retention time.Duration, maxBytes int64, err error) {
	if retention, err = ParseAge(h.Retention); err != nil {
		return 0, 0, fmt.Errorf("history.retention (--history-retention): %w", err)
	}
	if strings.TrimSpace(h.MaxBytes) == "0" {
		return retention, 0, nil
	}
	if maxBytes, err = ParseBytes(h.MaxBytes); err != nil {
		return 0, 0, fmt.Errorf("history.maxBytes (--history-max-bytes): %w", err)
	}
	return retention, maxBytes, nil
}

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

// Which Events the record stream carries (Config.Events).
const (
	EventsNone     = "none"
	EventsWarnings = "warnings"
	EventsAll      = "all"
)

// EventRetention is how long the history keeps an Event after it last
// happened (0: as long as records).
func (h HistoryConfig) EventRetention() (time.Duration, error) {
	if strings.TrimSpace(h.Events.Retention) == "" {
		return 0, nil
	}
	d, err := ParseAge(h.Events.Retention)
	if err != nil {
		return 0, fmt.Errorf("history.events.retention (--history-events-retention): %w", err)
	}
	return d, nil
}

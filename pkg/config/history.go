package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/kubediff/kubediff/pkg/moment"
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

// ParseAge reads a length of time (90m, 36h, 7d; moment.ParseAge).
func ParseAge(s string) (time.Duration, error) { return moment.ParseAge(s) }

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

package pipeline

import (
	"log/slog"
	"sync"
	"time"

	"github.com/kubediff/kubediff/pkg/identity"
)

// A source of identity can stop without an error kubediff sees: the API
// server's audit webhook configuration removed, the observer's
// registration deleted, a firewall rule. Records then go on without a
// user one after another, which no one notices in a stream of JSON.
const (
	// silentAfter is how long without a named record, while records
	// waited for a source and went on unnamed, before it is said.
	silentAfter = time.Minute
	// silentRecords is how many records must have gone on unnamed in
	// that time: a quiet cluster is not a silent source.
	silentRecords = 20
)

// sourceSilence says once when records stop being named, and once when
// they are named again.
type sourceSilence struct {
	log *slog.Logger

	mu        sync.Mutex
	lastNamed time.Time // the last named record, or the first observed
	unnamed   int       // records unnamed since lastNamed
	silent    bool
}

// observe counts one record's answer at now.
func (s *sourceSilence) observe(answer identity.Answer, now time.Time) {
	if s == nil || s.log == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastNamed.IsZero() {
		s.lastNamed = now
	}
	switch answer {
	case identity.Known:
		if s.silent {
			s.log.Info("identity: records name who made them again", "unnamedMeanwhile", s.unnamed)
		}
		s.lastNamed, s.unnamed, s.silent = now, 0, false
	case identity.Unknown:
		s.unnamed++
		if !s.silent && s.unnamed >= silentRecords && now.Sub(s.lastNamed) >= silentAfter {
			s.silent = true
			s.log.Warn("identity: no source has said who made a change for a while; records go on without a user (is the audit webhook, log or admission observer still reached? docs/identity.md)",
				"since", s.lastNamed.UTC().Format(time.RFC3339), "unnamed", s.unnamed)
		}
	}
}

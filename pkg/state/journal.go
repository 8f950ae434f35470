package state

import (
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/journal"
)

// Keep queues records of no stored object (an Event's facts about the
// object it regards) for the next write: no stored state says they were
// reported, so they need none to go with.
func (s *Store) Keep(records ...journal.Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keep(records, nil)
}

// keep queues records for the next write, which writes the state noted
// with them (o; nil: deleted, or in a list) in the same transaction. A
// record whose new state o is takes its JSON, which the watcher made for
// the state store anyway: the history need not encode the object again.
// The caller holds s.mu.
func (s *Store) keep(records []journal.Entry, o *journal.Object) {
	if !s.historyPolicy.On() {
		return
	}
	for _, e := range records {
		if o != nil && e.New != nil && e.Change.ResourceVersion == o.ResourceVersion {
			e.NewJSON = o.Raw
		}
		s.kept = append(s.kept, e)
	}
}

// Unstored notes the records of a change whose state cannot be stored (it
// could not be encoded): they are written with the state they hold
// themselves, and the stored state stays as it was.
func (s *Store) Unstored(target, key string, records ...journal.Entry) {
	s.note(journal.Ref{Target: target, Key: key}, nil, false, records)
}

// maxKeptRoom bounds the records' room a write leaves for the next.
const maxKeptRoom = 1024

// keptBatch is what a write takes of the history: the records queued
// and the policy.
type keptBatch struct {
	records []journal.Entry
	policy  history.Policy
	trim    bool // time to drop what retention no longer keeps
}

// snapshotKept takes the records queued: each one's state is noted (in
// pending, or in the list a full write writes), so the write that takes
// them writes their states too. The caller holds s.mu.
func (s *Store) snapshotKept() keptBatch {
	b := keptBatch{records: s.kept, policy: s.historyPolicy}
	// Room for as many as this write took (a steady rate's second), so
	// that the next one's do not grow the slice step by step, copying
	// entries of 600 bytes each time; bounded, after a burst.
	s.kept = make([]journal.Entry, 0, min(len(b.records), maxKeptRoom))
	if now := time.Now(); now.Sub(s.lastTrim) >= trimEvery {
		b.trim, s.lastTrim = true, now
	}
	return b
}

// empty says there is nothing to write.
func (b keptBatch) empty() bool { return len(b.records) == 0 && !b.trim }

func (b keptBatch) write(tx *bolt.Tx) error {
	if b.empty() {
		return nil
	}
	return history.Write(tx, b.records, b.policy, time.Now())
}

// requeueKept puts back records a failed write did not keep, before
// those noted since.
func (s *Store) requeueKept(b keptBatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kept = append(b.records, s.kept...)
}

package state

import (
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kubediff/kubediff/pkg/history"
)

// A record reaches the history in the transaction that writes its
// object's new state, never before it: the watcher makes the record, then
// notes the state, and a flush between the two would write the record
// alone; a crash then would report the change again at the restart, and
// the history would hold it twice. So a kept record waits until its
// object's state is noted (or, for a held update, released).
type keptRecord struct {
	entry history.Entry
	ref   Ref
	ready bool
	at    time.Time
}

// maxStateWait bounds how long a record waits for its state: one whose
// state never comes (the object could not be encoded) is written anyway.
const maxStateWait = 5 * time.Second

// Keep notes a record for the history, to be written with the state of
// the object stored at ref, which the watcher notes next.
func (s *Store) Keep(e history.Entry, ref Ref) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.historyPolicy.On() {
		return
	}
	k := &keptRecord{entry: e, ref: ref, ready: ref == (Ref{}), at: time.Now()}
	s.kept = append(s.kept, k)
	if !k.ready {
		s.waiting[ref] = append(s.waiting[ref], k)
	}
}

// stateNoted marks the records waiting for ref's state ready, and gives
// them that state's JSON (nil: deleted), which the watcher made for the
// state store anyway: the history need not encode the object again. The
// caller holds s.mu.
func (s *Store) stateNoted(ref Ref, o *Object) {
	for _, k := range s.waiting[ref] {
		k.ready = true
		if o != nil {
			k.entry.NewJSON = o.Raw
		}
	}
	delete(s.waiting, ref)
}

// keptBatch is what a write takes of the history: the records ready to
// go and the policy.
type keptBatch struct {
	records []*keptRecord
	policy  history.Policy
	trim    bool // time to drop what retention no longer keeps
}

// snapshotKept takes the records whose states are noted (and, for a full
// write of target, that target's: the list holds their states). The
// caller holds s.mu.
func (s *Store) snapshotKept(target string) keptBatch {
	b := keptBatch{policy: s.historyPolicy}
	now := time.Now()
	rest := s.kept[:0:0]
	for _, k := range s.kept {
		if k.ready || k.ref.Target == target && target != "" || now.Sub(k.at) >= maxStateWait {
			b.records = append(b.records, k)
			continue
		}
		rest = append(rest, k)
	}
	s.kept = rest
	if now.Sub(s.lastTrim) >= trimEvery {
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
	entries := make([]history.Entry, len(b.records))
	for i, k := range b.records {
		entries[i] = k.entry
	}
	return history.Write(tx, entries, b.policy, time.Now())
}

// requeueKept puts back records a failed write did not keep, before
// those noted since.
func (s *Store) requeueKept(b keptBatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kept = append(b.records, s.kept...)
}

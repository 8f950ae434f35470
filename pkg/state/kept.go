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
// object's state is noted (or, for a held update, released). Every way a
// state can fail to come ends the wait too: an object that cannot be
// stored (Unstored), a type no longer watched (Forget), a hold that
// Forget dropped, a target written whole (WriteFull). So no record waits
// on a timer, and none is left in waiting once written.
type keptRecord struct {
	entry history.Entry
	ref   Ref
	ready bool
}

// Keep notes a record for the history, to be written with the state of
// the object stored at ref, which the watcher notes next.
func (s *Store) Keep(e history.Entry, ref Ref) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.historyPolicy.On() {
		return
	}
	k := &keptRecord{entry: e, ref: ref, ready: ref == (Ref{})}
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

// Unstored ends the wait of the records kept for an object whose state
// cannot be stored (it could not be encoded): they are written with the
// state the record itself holds.
func (s *Store) Unstored(target, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stateNoted(Ref{Target: target, Key: key}, nil)
}

// snapshotKept takes the records whose states are noted (and, for a full
// write of target, that target's: the list holds their states, and they
// wait no more). The caller holds s.mu.
func (s *Store) snapshotKept(target string) keptBatch {
	b := keptBatch{policy: s.historyPolicy}
	now := time.Now()
	rest := s.kept[:0:0]
	for _, k := range s.kept {
		if !k.ready && target != "" && k.ref.Target == target {
			s.stateNoted(k.ref, nil) // the list written with them holds the state
		}
		if k.ready {
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

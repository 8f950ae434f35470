package state

import (
	"runtime/debug"

	bolt "go.etcd.io/bbolt"

	"github.com/kubediff/kubediff/pkg/journal"
)

// heldState is an object's newest state while its stored one is held,
// and the records noted meanwhile, which go to disk with it.
type heldState struct {
	latest  *journal.Object // nil: deleted
	noted   bool            // latest was noted since Hold
	records []journal.Entry
	// holders counts the Holds not yet released: a record the coalescer
	// held can go on to wait for who made it, held again before the
	// coalescer lets go.
	holders int
}

// Hold keeps ref's stored state where it is until Release: states noted
// meanwhile wait in memory, with their records. The pipeline holds an
// update a while to join it with the next ones (a rollout's steps) before
// its record is kept; were the newer state written meanwhile, a crash
// would leave it on disk without a record, and the change would be lost.
// Held, the state on disk is the one the record starts from, and a
// restart finds the change.
func (s *Store) Hold(ref journal.Ref) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[ref] == nil {
		s.held[ref] = &heldState{}
	}
	s.held[ref].holders++
}

// Release takes the records of what a Hold held, kept once it went on,
// and at the last Release notes ref's newest state with every record
// noted while it was held: the same write takes them all.
func (s *Store) Release(ref journal.Ref, records ...journal.Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.held[ref]
	if h == nil {
		s.keep(records, nil) // Forget dropped the hold: no state comes
		return
	}
	h.records = append(h.records, records...)
	if h.holders--; h.holders > 0 {
		return // another holder's record is still on its way
	}
	delete(s.held, ref)
	var latest *journal.Object // nil: no newer state was noted while held
	if h.noted {
		s.changes(ref.Target).objects[ref.Key] = h.latest
		latest = h.latest
	}
	s.keep(h.records, latest)
}

// WriteFull writes a target's complete state (its first list, or its
// stored objects passed through new rules) before it returns, a few MiB
// per transaction, replacing what was stored, and records the fingerprint
// of the rules the objects went through (Rules). The watcher reports a
// type's changes only after its first list is written: a crash from then
// on finds a stored state to compare with, so no change made after the
// sync is lost, however early the crash. records are those the list's
// objects were reported with (a type found while running reports what
// was created since): they go in the same transaction. When it fails,
// the list and the records are noted for the next flush to try again.
func (s *Store) WriteFull(target, rules string, list journal.List, records ...journal.Entry) (err error) {
	s.writing.Lock()
	defer s.writing.Unlock()
	s.mu.Lock()
	delete(s.pending, target) // older notes: the list supersedes them
	s.keep(records, nil)      // no flush takes them before this write: it waits for writing
	s.mu.Unlock()
	defer func() {
		if err != nil {
			s.Replace(target, list)
		}
	}()
	written, err := s.stage(target, list)
	if err != nil {
		return err
	}
	if written >= bigWrite {
		defer debug.FreeOSMemory() // as in Flush
	}
	name := []byte(target)
	// The records queued so far go in the same transaction, the list's
	// among them: each is on disk whenever its state is.
	s.mu.Lock()
	spools := s.snapshotSpools()
	kept := s.snapshotKept()
	s.mu.Unlock()
	err = s.db.Update(func(tx *bolt.Tx) error {
		if err := writeSpools(tx, spools); err != nil {
			return err
		}
		if err := kept.write(tx); err != nil {
			return err
		}
		targets := tx.Bucket(targetsBucket)
		if targets.Bucket(name) != nil {
			if err := targets.DeleteBucket(name); err != nil {
				return err
			}
		}
		if err := tx.Bucket(metaBucket).Put(rulesKey(target), []byte(rules)); err != nil {
			return err
		}
		return tx.Bucket(stagingBucket).MoveBucket(name, targets)
	})
	s.spoolsWritten(spools, err == nil)
	if err != nil {
		s.requeueKept(kept)
		return err
	}
	return nil
}

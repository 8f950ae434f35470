package state

import (
	"context"
	"maps"
	"runtime/debug"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kubediff/kubediff/pkg/journal"
)

// Run writes noted changes every second until ctx is done. Close writes
// the rest.
func (s *Store) Run(ctx context.Context) {
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := s.Flush()
		switch {
		case err != nil && !failing:
			s.log.Error("cannot write the state store: a restart now would miss recent changes", "err", err)
		case err == nil && failing:
			s.log.Info("state store written again")
		}
		failing = err != nil
	}
}

// Flush writes noted changes in one transaction: objects' states, the
// sinks' spools and the history together, taken at one instant, so a
// record is on disk whenever the state noted with it is (and a sink's
// record appended before its object's state was noted, too).
func (s *Store) Flush() error {
	s.writing.Lock()
	defer s.writing.Unlock()
	return s.flushLocked()
}

// catchUpEvery bounds how often readers make the store write: twenty
// callers asking as fast as they are answered, while changes flow, would
// otherwise make a transaction (and an fsync) of each query. What was
// noted in the last catchUpEvery may then be missing from an answer.
const catchUpEvery = 100 * time.Millisecond

// flushIfIdle is Flush for a reader, unless a write is under way (a
// first list of thousands of objects can take a while: the reader
// answers from what is on disk rather than wait for it) or a reader made
// one less than catchUpEvery ago.
func (s *Store) flushIfIdle() {
	if !s.writing.TryLock() {
		return
	}
	defer s.writing.Unlock()
	if time.Since(s.caughtUp) < catchUpEvery {
		return
	}
	s.caughtUp = time.Now()
	_ = s.flushLocked() // a failed write is Run's to report
}

// flushLocked is Flush; the caller holds s.writing.
func (s *Store) flushLocked() error {
	s.mu.Lock()
	pending := s.pending
	s.pending = map[string]*targetChanges{}
	spools := s.snapshotSpools()
	kept := s.snapshotKept()
	s.mu.Unlock()
	if len(pending) == 0 && len(spools) == 0 && kept.empty() {
		return nil
	}
	written := 0
	for target, tc := range pending {
		if tc.replace && !tc.forget {
			n, err := s.stage(target, tc.list)
			written += n
			if err != nil {
				s.requeue(pending)
				s.requeueKept(kept)
				return err
			}
		}
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		if err := writeSpools(tx, spools); err != nil {
			return err
		}
		if err := kept.write(tx); err != nil {
			return err
		}
		for target, tc := range pending {
			n, err := writeTarget(tx, target, tc)
			written += n
			if err != nil {
				return err
			}
		}
		return nil
	})
	s.spoolsWritten(spools, err == nil)
	if err != nil {
		s.requeue(pending)
		s.requeueKept(kept)
		return err
	}
	if written >= bigWrite {
		// A full write (the first list of every type, or a relist) built
		// the transaction's pages on the heap, several times the data.
		// Go would hand that memory back to the system over minutes;
		// handing it back now keeps the steady state's RSS near what it
		// is without a state dir. It happens once per full write.
		debug.FreeOSMemory()
	}
	return nil
}

// writeTarget writes one target's noted changes: a staged full write
// moved into place, or the target forgotten, then objects put and
// deleted. It returns the bytes written.
func writeTarget(tx *bolt.Tx, target string, tc *targetChanges) (written int, err error) {
	targets, name := tx.Bucket(targetsBucket), []byte(target)
	if tc.replace || tc.forget {
		if targets.Bucket(name) != nil {
			if err := targets.DeleteBucket(name); err != nil {
				return 0, err
			}
		}
		if tc.forget {
			// A full write staged by a flush that failed.
			if staging := tx.Bucket(stagingBucket); staging.Bucket(name) != nil {
				return 0, staging.DeleteBucket(name)
			}
			return 0, nil
		}
		// The full write, staged: now it takes the old one's place.
		if err := tx.Bucket(stagingBucket).MoveBucket(name, targets); err != nil {
			return 0, err
		}
	}
	b, err := targets.CreateBucketIfNotExists(name)
	if err != nil {
		return 0, err
	}
	for _, key := range slices.Sorted(maps.Keys(tc.objects)) {
		o := tc.objects[key]
		if o == nil {
			err = b.Delete(storedKey(key))
		} else {
			v := encodeAt(key, o)
			written += len(v)
			err = b.Put(storedKey(key), v)
		}
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// snapshotSpools takes what the next write holds of every spool. The
// caller holds s.mu.
func (s *Store) snapshotSpools() []flushed {
	var spools []flushed
	for _, q := range s.spools {
		if f, ok := q.snapshot(); ok {
			spools = append(spools, f)
		}
	}
	return spools
}

func writeSpools(tx *bolt.Tx, spools []flushed) error {
	for _, f := range spools {
		if err := f.write(tx); err != nil {
			return err
		}
	}
	return nil
}

// spoolsWritten counts what a write encoded in its spool's size and,
// once committed, drops it from memory.
func (s *Store) spoolsWritten(spools []flushed, committed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range spools {
		f.sized()
		if committed {
			f.written()
		}
	}
}

// bigWrite is how many bytes a flush must write to count as a full write.
const bigWrite = 4 << 20

// stageBytes is how much a transaction of a full write holds: bbolt
// builds a transaction's pages on the heap, and the first list of 300,000
// objects in one transaction took gigabytes.
const stageBytes = 4 << 20

// stage writes list into the target's staging bucket, stageBytes per
// transaction; the flush then moves it into place, in the transaction
// that writes what was noted since. A crash in between leaves the stored
// objects as they were (Open drops the staging). It returns the bytes
// written.
func (s *Store) stage(target string, list journal.List) (written int, err error) {
	name := []byte(target)
	err = s.db.Update(func(tx *bolt.Tx) error {
		staging := tx.Bucket(stagingBucket)
		if staging.Bucket(name) != nil {
			if err := staging.DeleteBucket(name); err != nil {
				return err
			}
		}
		_, err := staging.CreateBucket(name)
		return err
	})
	for i := 0; err == nil && i < list.Len(); {
		err = s.db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(stagingBucket).Bucket(name)
			// Keys in order into an empty bucket fill pages completely
			// instead of splitting them at random.
			b.FillPercent = 1.0
			for n := 0; i < list.Len() && n < stageBytes; i++ {
				o := list.Object(i)
				if o == nil {
					continue
				}
				key := list.Key(i)
				v := encodeAt(key, o)
				n += len(v)
				written += len(v)
				if err := b.Put(storedKey(key), v); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return written, err
}

// requeue puts back changes a failed write did not store, under what was
// noted since (which is newer).
func (s *Store) requeue(failed map[string]*targetChanges) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for target, tc := range failed {
		newer := s.pending[target]
		if newer == nil {
			s.pending[target] = tc
			continue
		}
		if newer.replace || newer.forget {
			continue
		}
		// Changes noted after the failed ones go on top of them (a
		// replace keeps its list).
		for key, o := range newer.objects {
			tc.objects[key] = o
		}
		s.pending[target] = tc
	}
}

// Package state keeps on disk the last state kubediff saw of every watched
// object, so that after a restart the first list of each type is compared
// with it and what changed while kubediff was down is reported, not lost.
//
// The store is bbolt (etcd's embedded store: one file, transactions,
// pure Go). Writes are batched: the watcher's changes are noted in memory
// and written in one transaction a second, so the steady state pays a map
// write per change and a sequential disk write per second.
//
// # A record and its state go together
//
// The history (pkg/history) is kept in the same file, and a record
// reaches the disk in the transaction that writes its object's new
// state, never apart from it. The store is the journal the record path
// writes to: the watcher's Journal (Put, Delete, Unstored, WriteFull,
// Forget), the pipeline's StateHolds (Hold, Release) and Keeper (Keep),
// each declared by the package that calls it, over the types of
// pkg/journal, whose package comment sets out the protocol and why.
// Here, a noted state and the records noted with it wait in memory
// (pending, kept) for the same transaction; a held object's, for its
// last Release (holds.go).
//
// Flush and WriteFull take what is noted at one instant, under one lock,
// so they can never cut between a record and its state.
package state

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/journal"
)

// Format is the version of what is stored. A newer kubediff may change it;
// an older one refuses a newer format rather than misread it.
const Format = "1"

// fileName is the database inside the state directory.
const fileName = "state.db"

var (
	metaBucket    = []byte("meta")
	targetsBucket = []byte("targets") // a bucket per target: object key (storedKey) → journal.Object (encodeAt)
	// stagingBucket holds full writes under way (stage): a bucket per
	// target, moved into targets when complete.
	stagingBucket = []byte("staging")
	formatKey     = []byte("format")
	clusterKey    = []byte("cluster")
	saltKey       = []byte("salt")
)

// flushEvery is how often noted changes are written.
const flushEvery = time.Second

// Store is the state directory's database.
type Store struct {
	db  *bolt.DB
	log *slog.Logger

	// writing serializes Flush and WriteFull: a full write replaces a
	// target's bucket, which a flush must not interleave with.
	writing sync.Mutex
	// caughtUp is when a reader last made the store write (flushIfIdle);
	// writing guards it.
	caughtUp time.Time

	mu      sync.Mutex
	pending map[string]*targetChanges  // by target key
	spools  map[string]*Spool          // by sink name
	held    map[journal.Ref]*heldState // see Hold

	historyPolicy history.Policy
	kept          []journal.Entry // records for the history, their states noted, not yet written
	lastTrim      time.Time
}

// targetChanges are a target's changes not yet written.
type targetChanges struct {
	replace bool                       // all of the target's stored objects are replaced ...
	list    journal.List               // ... by these, and objects
	objects map[string]*journal.Object // nil: deleted
	forget  bool                       // the target is no longer watched
}

// Bind ties the store to a cluster (an identity such as the kube-system
// namespace's UID). A store of another cluster is emptied with a warning,
// history included: its objects would only make bogus records.
func (s *Store) Bind(cluster string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(metaBucket)
		if stored := string(meta.Get(clusterKey)); stored != "" && stored != cluster {
			s.log.Warn("state dir holds another cluster's state: starting fresh", "path", s.db.Path())
			if err := tx.DeleteBucket(targetsBucket); err != nil {
				return err
			}
			if _, err := tx.CreateBucket(targetsBucket); err != nil {
				return err
			}
			if err := history.Forget(tx); err != nil {
				return err
			}
		}
		return meta.Put(clusterKey, []byte(cluster))
	})
}

// Rebind records that the cluster behind the same address changed while
// kubediff ran (etcd restored or rebuilt): the stored objects are kept,
// since the watcher compares the new cluster with them and writes what
// differs.
func (s *Store) Rebind(cluster string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(metaBucket).Put(clusterKey, []byte(cluster))
	})
}

// Rules returns the fingerprint of the rules a target's stored objects
// went through (diff.Differ.RulesFingerprint), as WriteFull recorded it;
// "" when unknown.
func (s *Store) Rules(target string) string {
	var fp string
	_ = s.db.View(func(tx *bolt.Tx) error {
		fp = string(tx.Bucket(metaBucket).Get(rulesKey(target)))
		return nil
	})
	return fp
}

func rulesKey(target string) []byte { return []byte("rules/" + target) }

// Salt returns the key of the hashes shown in place of redacted values,
// made at the first start and kept with the state: a value that did not
// change while kubediff was down hashes the same after a restart.
func (s *Store) Salt() ([]byte, error) {
	var salt []byte
	err := s.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(metaBucket)
		if stored := meta.Get(saltKey); len(stored) == 32 {
			salt = bytes.Clone(stored)
			return nil
		}
		salt = make([]byte, 32)
		if _, err := rand.Read(salt); err != nil {
			return err
		}
		return meta.Put(saltKey, salt)
	})
	if err != nil {
		return nil, fmt.Errorf("state dir: redaction key: %w", err)
	}
	return salt, nil
}

// Each calls fn with each of a target's stored objects, in key order,
// without holding them all in memory: o.Raw is valid only during the
// call. ok is false when nothing was ever stored for the target.
func (s *Store) Each(target string, fn func(key string, o *journal.Object)) (ok bool, err error) {
	err = guard(func() error {
		return s.db.View(func(tx *bolt.Tx) error {
			b := tx.Bucket(targetsBucket).Bucket([]byte(target))
			if b == nil {
				return nil
			}
			ok = true
			return b.ForEach(func(k, v []byte) error {
				key, o, err := decodeAt(k, v)
				if err != nil {
					return err
				}
				fn(key, o)
				return nil
			})
		})
	})
	return ok, err
}

// Put notes an object's new state, with the records the pipeline kept of
// the change that led to it: the same write takes them all.
func (s *Store) Put(target, key string, o *journal.Object, records ...journal.Entry) {
	s.note(journal.Ref{Target: target, Key: key}, o, true, records)
}

// Delete notes that an object is gone, with the records of its deletion.
func (s *Store) Delete(target, key string, records ...journal.Entry) {
	s.note(journal.Ref{Target: target, Key: key}, nil, true, records)
}

// note notes ref's new state (when stored: o, nil for deleted) and the
// records that lead to it; a held object's wait for its Release.
func (s *Store) note(ref journal.Ref, o *journal.Object, stored bool, records []journal.Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.held[ref]; h != nil {
		if stored {
			h.latest, h.noted = o, true
		}
		h.records = append(h.records, records...)
		return
	}
	if stored {
		s.changes(ref.Target).objects[ref.Key] = o
	}
	s.keep(records, o)
}

// Replace notes a target's complete state (a list), with the records its
// objects were reported with. Changes noted after it apply on top.
func (s *Store) Replace(target string, list journal.List, records ...journal.Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending[target] = &targetChanges{replace: true, list: list, objects: map[string]*journal.Object{}}
	s.keep(records, nil)
}

// Forget notes that a target is no longer watched (its type is gone). Its
// holds end: no state of it comes any more, and the records noted while
// they held go with the next write.
func (s *Store) Forget(target string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending[target] = &targetChanges{forget: true, objects: map[string]*journal.Object{}}
	for ref, h := range s.held {
		if ref.Target == target {
			s.keep(h.records, nil)
			delete(s.held, ref)
		}
	}
}

func (s *Store) changes(target string) *targetChanges {
	tc := s.pending[target]
	if tc == nil || tc.forget {
		tc = &targetChanges{objects: map[string]*journal.Object{}}
		s.pending[target] = tc
	}
	return tc
}

// Close writes what is noted and closes the database.
func (s *Store) Close() error {
	return errors.Join(s.Flush(), s.db.Close())
}

// maxStoredKey bounds an object's key (namespace/name) in the store. A
// name validated only as a path segment (a Role's, a ClusterRole's) can
// be 40 KiB, past bbolt's 32 KiB limit for a key, and one refused key
// fails the whole write: every later state and record would be lost.
const maxStoredKey = 1024

// storedKey is key as the store keeps it: key itself, or, when longer
// than maxStoredKey, its first bytes and a hash of the whole; the value
// then carries the whole key (encodeAt).
func storedKey(key string) []byte {
	if len(key) <= maxStoredKey {
		return []byte(key)
	}
	sum := sha256.Sum256([]byte(key))
	return []byte(key[:maxStoredKey-80] + "~sha256:" + hex.EncodeToString(sum[:]))
}

// encodeAt is an object's value under key: encode, preceded, when the
// store shortens the key, by 0, the key's length (uvarint) and the key.
// A UID never starts with 0, so the two forms are told apart.
func encodeAt(key string, o *journal.Object) []byte {
	if len(key) <= maxStoredKey {
		return encode(o)
	}
	b := binary.AppendUvarint([]byte{0}, uint64(len(key)))
	return append(append(b, key...), encode(o)...)
}

// decodeAt reads the value v stored under k: the object's whole key and
// the object.
func decodeAt(k, v []byte) (string, *journal.Object, error) {
	if len(v) == 0 || v[0] != 0 {
		o, err := decode(v)
		return string(k), o, err
	}
	n, size := binary.Uvarint(v[1:])
	if size <= 0 || n > uint64(len(v)-1-size) {
		return "", nil, errors.New("damaged object record")
	}
	rest := v[1+size:]
	o, err := decode(rest[n:])
	return string(rest[:n]), o, err
}

// encode is uid \n resourceVersion \n JSON: neither holds a newline.
func encode(o *journal.Object) []byte {
	b := make([]byte, 0, len(o.UID)+len(o.ResourceVersion)+2+len(o.Raw))
	b = append(append(append(append(b, o.UID...), '\n'), o.ResourceVersion...), '\n')
	return append(b, o.Raw...)
}

func decode(v []byte) (*journal.Object, error) {
	uid, rest, ok1 := bytes.Cut(v, []byte{'\n'})
	rv, raw, ok2 := bytes.Cut(rest, []byte{'\n'})
	if !ok1 || !ok2 || len(raw) == 0 || raw[0] != '{' {
		return nil, errors.New("damaged object record")
	}
	// raw is bbolt's, valid only during the transaction.
	return &journal.Object{UID: string(uid), ResourceVersion: string(rv), Raw: raw}, nil
}

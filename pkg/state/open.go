package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/kubediff/kubediff/pkg/journal"
)

// Open opens (or creates) the store in dir. A damaged record costs that
// record (dropped with a warning); a damaged file is moved aside with a
// warning and a fresh one started; a store of a newer format, or a
// directory kubediff cannot write, is an error and is left as it is. Open
// touches only the disk: call Bind once the cluster is known.
func Open(dir string, log *slog.Logger) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, fileName)
	db, format, damaged, err := openChecked(path)
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("state dir %s: %w (each replica needs its own)", dir, ErrInUse)
	}
	if err != nil && !isDamage(err) {
		return nil, fmt.Errorf("state dir %s: cannot open %s: %w", dir, fileName, err)
	}
	if err != nil {
		log.Warn("state store damaged: moved aside, starting fresh (changes made while kubediff was down are not reported this time)",
			"path", path, "movedTo", moveAside(path), "err", err)
		db, err = open(path)
		damaged = nil
	}
	if err != nil {
		return nil, fmt.Errorf("state dir %s: %w", dir, err)
	}
	if format != "" && format != Format {
		db.Close()
		return nil, fmt.Errorf("state dir %s: written by another kubediff version (format %s, this one reads %s); use another --state-dir or remove it", dir, format, Format)
	}
	if err := prepare(db, damaged); err != nil {
		db.Close()
		return nil, fmt.Errorf("state dir %s: %w", dir, err)
	}
	if len(damaged) > 0 {
		log.Warn("state store: damaged records dropped, the rest kept", "path", path, "records", len(damaged), "where", damaged.where())
	}
	return &Store{db: db, log: log, pending: map[string]*targetChanges{}, spools: map[string]*Spool{}, held: map[journal.Ref]*heldState{}}, nil
}

// openChecked opens the file and walks it (check).
func openChecked(path string) (db *bolt.DB, format string, damaged damagedRecords, err error) {
	if db, err = open(path); err != nil {
		return nil, "", nil, err
	}
	s := &Store{db: db}
	if format, damaged, err = s.check(); err != nil {
		db.Close()
		return nil, "", nil, err
	}
	return db, format, damaged, nil
}

// isDamage tells a damaged file from a directory kubediff cannot use
// (read-only, not permitted, full): only the former is moved aside.
func isDamage(err error) bool {
	var errno syscall.Errno
	var pathErr *os.PathError
	return !errors.As(err, &errno) && !errors.As(err, &pathErr)
}

// prepare creates the buckets, drops a full write a crash cut short (the
// target's stored objects are still the ones before it) and the damaged
// records, and stamps the format.
func prepare(db *bolt.DB, damaged damagedRecords) error {
	return db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(metaBucket)
		if err != nil {
			return err
		}
		for _, name := range [][]byte{targetsBucket, spoolsBucket} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		if tx.Bucket(stagingBucket) != nil {
			if err := tx.DeleteBucket(stagingBucket); err != nil {
				return err
			}
		}
		if _, err := tx.CreateBucket(stagingBucket); err != nil {
			return err
		}
		for _, d := range damaged {
			if b := tx.Bucket(d.top).Bucket(d.bucket); b != nil {
				if err := b.Delete(d.key); err != nil {
					return err
				}
			}
		}
		return meta.Put(formatKey, []byte(Format))
	})
}

func open(path string) (db *bolt.DB, err error) {
	err = guard(func() error {
		// Another process holding the file is an error, not a wait. The
		// free list is kept in the file: rebuilding it at open would walk
		// the pages on a goroutine of bbolt's, where damage cannot be
		// caught.
		db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
		return err
	})
	return db, err
}

// moveAside renames a damaged store so that it can be looked at later.
func moveAside(path string) string {
	aside := fmt.Sprintf("%s.damaged-%s", path, time.Now().UTC().Format("20060102T150405Z"))
	if err := os.Rename(path, aside); err != nil {
		_ = os.Remove(path)
		return ""
	}
	return aside
}

// damagedRecord is one stored object or queued record that cannot be
// read: top bucket, its inner bucket (a target or a sink), key.
type damagedRecord struct{ top, bucket, key []byte }

type damagedRecords []damagedRecord

// where says which targets and sinks lost records, for the warning.
func (d damagedRecords) where() string {
	seen := map[string]bool{}
	var out []string
	for _, r := range d {
		w := "objects of " + string(r.bucket)
		if string(r.top) == string(spoolsBucket) {
			w = "queue of sink " + string(r.bucket)
		}
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return strings.Join(out, ", ")
}

// check reads the stored format and walks every stored object and queued
// record once, so that damage shows here rather than later: records that
// cannot be read are returned; a file bbolt cannot walk is an error.
func (s *Store) check() (format string, damaged damagedRecords, err error) {
	err = guard(func() error {
		return s.db.View(func(tx *bolt.Tx) error {
			if meta := tx.Bucket(metaBucket); meta != nil {
				format = string(meta.Get(formatKey))
			}
			if format != "" && format != Format {
				return nil // not ours to read
			}
			// Staging too: Open deletes it, which reads every page.
			valid := map[string]func(k, v []byte) bool{
				string(targetsBucket): func(k, v []byte) bool { _, _, err := decodeAt(k, v); return err == nil },
				string(stagingBucket): func(_, _ []byte) bool { return true },
				string(spoolsBucket):  func(k, v []byte) bool { return len(k) == 8 && json.Valid(v) },
			}
			for top, ok := range valid {
				d, err := walk(tx, []byte(top), ok)
				if err != nil {
					return err
				}
				damaged = append(damaged, d...)
			}
			return nil
		})
	})
	return format, damaged, err
}

// walk reads every record under top, returning those ok rejects.
func walk(tx *bolt.Tx, top []byte, ok func(k, v []byte) bool) (damagedRecords, error) {
	outer := tx.Bucket(top)
	if outer == nil {
		return nil, nil
	}
	var damaged damagedRecords
	err := outer.ForEachBucket(func(name []byte) error {
		return outer.Bucket(name).ForEach(func(k, v []byte) error {
			if !ok(k, v) {
				damaged = append(damaged, damagedRecord{top: top, bucket: append([]byte(nil), name...), key: append([]byte(nil), k...)})
			}
			return nil
		})
	})
	return damaged, err
}

// guard turns a panic inside bbolt (it panics on some damaged pages), or
// a fault reading the memory-mapped file (one cut short), into an error:
// a damaged file must never crash kubediff.
func guard(f func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("damaged database: %v", r)
		}
	}()
	return f()
}

package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/history"
)

// trimEvery is how often an idle store still drops what the history's
// retention no longer keeps.
const trimEvery = time.Minute

// SetHistory turns the history on (or off, with a zero policy: what it
// kept is then dropped by the next writes) and marks when it began.
func (s *Store) SetHistory(p history.Policy) error {
	s.mu.Lock()
	s.historyPolicy = p
	s.mu.Unlock()
	if !p.On() {
		return nil
	}
	return s.db.Update(func(tx *bolt.Tx) error { return history.Write(tx, nil, p, time.Now()) })
}

// KeepTypes keeps the names of the types watched, for queries that name
// a type none of whose objects changed yet.
func (s *Store) KeepTypes(types []discovery.Resource) error {
	s.mu.Lock()
	on := s.historyPolicy.On()
	s.mu.Unlock()
	if !on {
		return nil
	}
	return s.db.Update(func(tx *bolt.Tx) error { return history.WriteTypes(tx, types) })
}

// History reads the store's history, after writing what was noted: a
// record kubediff printed a moment ago is in the answer, not a second
// later (flushIfIdle).
func (s *Store) History() *history.Reader {
	return history.NewReader(s.db, current).CatchingUp(s.flushIfIdle)
}

// ErrInUse says a running kubediff holds the state dir's file.
var ErrInUse = errors.New("in use by a running kubediff")

// CheckHistory says whether dir holds a kubediff state at all.
func CheckHistory(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, fileName)); err != nil {
		return fmt.Errorf("state dir %s: no kubediff state there (%w)", dir, err)
	}
	return nil
}

// OpenHistory opens the history in a state dir for reading, while no
// kubediff runs with it. Close the returned database when done: while it
// is open no kubediff can start with the dir, so readers that stay (the
// page) open it for each query.
func OpenHistory(dir string) (*history.Reader, func() error, error) {
	r, err := OpenReadOnly(dir)
	if err != nil {
		return nil, nil, err
	}
	return r.History, r.Close, nil
}

// ReadOnly is a state dir opened for reading while no kubediff runs with
// it.
type ReadOnly struct {
	db      *bolt.DB
	History *history.Reader
}

// OpenReadOnly opens a state dir for reading; ErrInUse while a kubediff
// runs with it.
func OpenReadOnly(dir string) (*ReadOnly, error) {
	path := filepath.Join(dir, fileName)
	if err := CheckHistory(dir); err != nil {
		return nil, err
	}
	var db *bolt.DB
	err := guard(func() (err error) {
		db, err = bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
		return err
	})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("state dir %s: %w; ask it instead with --server", dir, ErrInUse)
	}
	if err != nil {
		return nil, fmt.Errorf("state dir %s: %w", dir, err)
	}
	return &ReadOnly{db: db, History: history.NewReader(db, current)}, nil
}

// Close closes the state dir.
func (r *ReadOnly) Close() error { return r.db.Close() }

// Identity is the cluster the state dir belongs to and its own id ("":
// it never made one, Store.Identity).
func (r *ReadOnly) Identity() (cluster, instance string) {
	_ = r.db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(metaBucket)
		cluster, instance = string(meta.Get(clusterKey)), string(meta.Get(instanceKey))
		return nil
	})
	return cluster, instance
}

// EachStored calls fn with every stored object's id and state.
func (r *ReadOnly) EachStored(fn func(id change.ObjectID, raw []byte) error) error {
	return guard(func() error {
		return r.db.View(func(tx *bolt.Tx) error { return eachStored(tx, fn) })
	})
}

// current finds an object's stored state among the targets of its type
// (a type is watched in one target, or one per namespace). Target keys
// start with the type's GroupVersionResource ("apps/v1, Resource=deployments|…").
func current(tx *bolt.Tx, group, resource, namespace, name string) []byte {
	targets := tx.Bucket(targetsBucket)
	if targets == nil {
		return nil
	}
	key := storedKey(name)
	if namespace != "" {
		key = storedKey(namespace + "/" + name)
	}
	var found []byte
	_ = targets.ForEachBucket(func(target []byte) error {
		if found != nil || !targetOf(string(target), group, resource) {
			return nil
		}
		if v := targets.Bucket(target).Get(key); v != nil {
			if _, o, err := decodeAt(key, v); err == nil {
				found = o.Raw
			}
		}
		return nil
	})
	return found
}

// targetOf says whether a target key watches group/resource.
func targetOf(target, group, resource string) bool {
	g, res, ok := targetType(target)
	return ok && g == group && res == resource
}

package state

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/history"
)

// instanceKey names this state dir among every writer of a shared
// history: events fold per state dir, so their entries are named by it.
var instanceKey = []byte("instance")

// TakeOutbox returns up to max rows the history keeps for another store
// (history.Policy.Outbox), oldest first, and ack, which drops them once
// that store committed them. A row not acked is taken again.
func (s *Store) TakeOutbox(max int) (rows []history.Row, ack func() error, err error) {
	var last []byte
	err = guard(func() error {
		return s.db.View(func(tx *bolt.Tx) error {
			rows, last, err = history.ReadOutbox(tx, max)
			return err
		})
	})
	ack = func() error {
		return s.db.Update(func(tx *bolt.Tx) error { return history.DropOutbox(tx, last) })
	}
	return rows, ack, err
}

// Identity returns the cluster the store is bound to (Bind) and the
// state dir's own id, made at its first call and kept.
func (s *Store) Identity() (cluster, instance string, err error) {
	err = s.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(metaBucket)
		cluster = string(meta.Get(clusterKey))
		if v := meta.Get(instanceKey); len(v) > 0 {
			instance = string(v)
			return nil
		}
		b := make([]byte, 8)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		instance = hex.EncodeToString(b)
		return meta.Put(instanceKey, []byte(instance))
	})
	if err != nil {
		return "", "", fmt.Errorf("state dir: identity: %w", err)
	}
	return cluster, instance, nil
}

// EachStored calls fn with every stored object's id and state (a copy
// fn may keep), in one read transaction.
func (s *Store) EachStored(fn func(id change.ObjectID, raw []byte) error) error {
	return guard(func() error {
		return s.db.View(func(tx *bolt.Tx) error { return eachStored(tx, fn) })
	})
}

func eachStored(tx *bolt.Tx, fn func(id change.ObjectID, raw []byte) error) error {
	return tx.Bucket(targetsBucket).ForEachBucket(func(target []byte) error {
		group, resource, ok := targetType(string(target))
		if !ok {
			return nil
		}
		return tx.Bucket(targetsBucket).Bucket(target).ForEach(func(k, v []byte) error {
			key, o, err := decodeAt(k, v)
			if err != nil {
				return nil // a damaged object is left out, as a read leaves it
			}
			namespace, name, found := strings.Cut(key, "/")
			if !found {
				namespace, name = "", key
			}
			return fn(change.NewObjectID(group, resource, namespace, name), bytes.Clone(o.Raw))
		})
	})
}

// targetType reads the group and resource of a target key
// ("apps/v1, Resource=deployments|…").
func targetType(target string) (group, resource string, ok bool) {
	gvr, _, _ := strings.Cut(target, "|")
	gv, res, found := strings.Cut(gvr, ", Resource=")
	if !found {
		return "", "", false
	}
	g, _, hasGroup := strings.Cut(gv, "/")
	if !hasGroup {
		g = ""
	}
	return g, res, true
}

// CatchUp writes what was noted, unless the store is writing already or
// a reader made it write a moment ago (as a history read does): a
// change kubediff printed is then in the outbox too.
func (s *Store) CatchUp() { s.flushIfIdle() }

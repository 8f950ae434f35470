package state

import (
	"bytes"
	"maps"
	"slices"

	"github.com/kubediff/kubediff/pkg/journal"
)

// load returns a target's stored objects by key, copied out of the
// store; ok is false when nothing was ever stored for it.
func (s *Store) load(target string) (objects map[string]*journal.Object, ok bool, err error) {
	objects = map[string]*journal.Object{}
	ok, err = s.Each(target, func(key string, o *journal.Object) {
		o.Raw = bytes.Clone(o.Raw)
		objects[key] = o
	})
	return objects, ok, err
}

// objectsOf is a List of objects already in memory.
func objectsOf(objects map[string]*journal.Object) journal.List {
	return objectMap{keys: slices.Sorted(maps.Keys(objects)), objects: objects}
}

type objectMap struct {
	keys    []string
	objects map[string]*journal.Object
}

func (m objectMap) Len() int                     { return len(m.keys) }
func (m objectMap) Key(i int) string             { return m.keys[i] }
func (m objectMap) Object(i int) *journal.Object { return m.objects[m.keys[i]] }

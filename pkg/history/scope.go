package history

import (
	"bytes"
	"slices"

	"github.com/kubediff/kubediff/pkg/change"
)

// Scope is a type in a namespace: what one access decision covers. An
// empty Namespace is every namespace, or a cluster-scoped type.
type Scope struct {
	Group, Resource, Namespace string
}

// Grants are the scopes a caller may see, decided before a query reads
// anything: a type granted with no namespace is granted in every one.
// The zero value grants nothing.
type Grants struct {
	scopes map[Scope]bool
}

// Grant lets the caller see s.
func (g *Grants) Grant(s Scope) {
	if g.scopes == nil {
		g.scopes = map[Scope]bool{}
	}
	g.scopes[s] = true
}

// Allows says whether a record of group/resource in namespace may be
// shown.
func (g *Grants) Allows(group, resource, namespace string) bool {
	return g.scopes[Scope{group, resource, ""}] || namespace != "" && g.scopes[Scope{group, resource, namespace}]
}

// Scopes returns the types and namespaces, among those the history holds
// records of, that q may read: the only ones whose access a query must
// decide. It reads the objects index a type and a namespace at a time,
// not record by record.
func (r *Reader) Scopes(q Query) ([]Scope, error) {
	var out []Scope
	add := func(s Scope) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	err := r.view(func(b *readBuckets) error {
		if ids := q.objects(); ids != nil {
			for _, id := range ids {
				group, resource, namespace, _ := id.Parts()
				add(Scope{group, resource, namespace})
			}
			if !b.empty {
				b.eventScopesOf(ids, add)
			}
			return nil
		}
		if b.empty {
			return nil
		}
		c := b.objects.Cursor()
		for _, typ := range b.typesKept(c, q.Select) {
			if q.Namespace != "" {
				if k, _ := c.Seek(scopePrefix(typ.Group, typ.Resource, q.Namespace)); bytes.HasPrefix(k, scopePrefix(typ.Group, typ.Resource, q.Namespace)) {
					add(Scope{typ.Group, typ.Resource, q.Namespace})
				}
				continue
			}
			for _, s := range namespacesKept(c, typ.Group, typ.Resource) {
				add(s)
			}
		}
		b.eventScopes(q.Namespace, add)
		return nil
	})
	return out, err
}

// eventScopes adds the scopes the events kept (in namespace; "": all)
// need: their objects' types in their namespaces, and Events there. The
// events of every type are counted, whatever q selects: an event is
// listed under its owners' types too.
func (b *readBuckets) eventScopes(namespace string, add func(Scope)) {
	if b.eventObjects == nil {
		return
	}
	c := b.eventObjects.Cursor()
	for _, typ := range b.typesKept(c, nil) {
		for _, s := range namespacesKept(c, typ.Group, typ.Resource) {
			if namespace == "" || s.Namespace == namespace {
				add(s)
				add(EventsScope(s.Namespace))
			}
		}
	}
}

// eventScopesOf adds the scopes the events listed under the named
// objects need: each event's own object's type (a Deployment's Pods) and
// Events in its namespace. It reads the index entries under the objects
// only, each naming the event's object.
func (b *readBuckets) eventScopesOf(ids []change.ObjectID, add func(Scope)) {
	if b.eventObjects == nil {
		return
	}
	for _, id := range ids {
		prefix := indexPrefix(id)
		c := b.eventObjects.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			group, resource, namespace, _ := change.ObjectID(v).Parts()
			add(Scope{group, resource, namespace})
			add(EventsScope(namespace))
		}
	}
}

// typesKept are the types the objects index holds records of, among
// those selected (none: every type).
func (b *readBuckets) typesKept(c cursor, selected []Selector) []Scope {
	var out []Scope
	if len(selected) > 0 {
		for _, s := range selected {
			typ := Scope{Group: s.Group, Resource: s.Resource}
			if k, _ := c.Seek(typePrefix(s.Group, s.Resource)); bytes.HasPrefix(k, typePrefix(s.Group, s.Resource)) && !slices.Contains(out, typ) {
				out = append(out, typ)
			}
		}
		return out
	}
	for k, _ := c.First(); k != nil; {
		group, resource, _, ok := scopeOf(k)
		if !ok {
			k, _ = c.Seek(successor(k)) // not an object's key: step over it
			continue
		}
		out = append(out, Scope{Group: group, Resource: resource})
		k, _ = c.Seek(after(typePrefix(group, resource)))
	}
	return out
}

// namespacesKept are the namespaces of group/resource that the objects
// index holds records of.
func namespacesKept(c cursor, group, resource string) []Scope {
	var out []Scope
	prefix := typePrefix(group, resource)
	for k, _ := c.Seek(prefix); bytes.HasPrefix(k, prefix); {
		_, _, namespace, ok := scopeOf(k)
		if !ok {
			k, _ = c.Seek(successor(k))
			continue
		}
		out = append(out, Scope{group, resource, namespace})
		k, _ = c.Seek(after(scopePrefix(group, resource, namespace)))
	}
	return out
}

// scopeOf reads the type and namespace of an objects index key
// (group/resource/namespace/name \x00 time|seq).
func scopeOf(k []byte) (group, resource, namespace string, ok bool) {
	parts := bytes.SplitN(k, []byte("/"), 4)
	if len(parts) != 4 {
		return "", "", "", false
	}
	return string(parts[0]), string(parts[1]), string(parts[2]), true
}

// cursor is the part of a bbolt cursor the scope scan needs.
type cursor interface {
	First() ([]byte, []byte)
	Seek([]byte) ([]byte, []byte)
}

// typePrefix starts every index key of the type's objects.
func typePrefix(group, resource string) []byte { return []byte(group + "/" + resource + "/") }

// scopePrefix starts every index key of the type's objects in namespace.
func scopePrefix(group, resource, namespace string) []byte {
	return []byte(group + "/" + resource + "/" + namespace + "/")
}

// after is the first key past every key that starts with prefix, which
// ends in "/" (no part of an object id holds one): the "/" becomes the
// next byte, "0".
func after(prefix []byte) []byte {
	out := bytes.Clone(prefix)
	out[len(out)-1] = '/' + 1
	return out
}

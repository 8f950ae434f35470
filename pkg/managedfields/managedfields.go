// Package managedfields keeps of an object's metadata.managedFields what
// kubediff needs to say who made a change, and answers which entry owns a
// changed field. The watcher's decoder and the diff's cache transform
// both slim entries to this form: the full field sets are most of an
// object's bytes, but their first levels are what tells the owner of
// spec.replicas from the owner of status.
package managedfields

import "strings"

// Depth is how many levels of an entry's field set (fieldsV1) are kept:
// enough to tell spec.replicas from spec.template, and one label or
// annotation from another, while a Pod's container fields (under a list,
// whose items fieldsV1 names by key) are kept as one "owns something in
// spec.containers".
const Depth = 3

// Kept are the keys of a managedFields entry that are kept; the rest
// (apiVersion, fieldsType) are dropped, and fieldsV1 is cut to Depth.
var Kept = map[string]bool{"manager": true, "operation": true, "time": true, "subresource": true, "fieldsV1": true}

// FieldsKey is the key of an entry's field set.
const FieldsKey = "fieldsV1"

// IsField says whether a field set's key names an object field ("f:spec").
// The others name list items by key ("k:{…}") or value ("v:…"), or the
// field itself ("."): a changed path, which indexes lists by position,
// cannot be matched with them, so they are dropped.
func IsField(key string) bool { return strings.HasPrefix(key, "f:") }

// Slim cuts obj's managedFields entries to what is kept, in place: the
// keys in Kept, and of fieldsV1 the fields (IsField) down to Depth levels,
// each at the last level an empty set. An entry already slim is left as
// it is, so that slimming twice costs a walk and no allocation.
func Slim(obj map[string]any) {
	meta, _ := obj["metadata"].(map[string]any)
	entries, _ := meta["managedFields"].([]any)
	for _, e := range entries {
		entry, ok := e.(map[string]any)
		if !ok {
			continue
		}
		for k, v := range entry {
			if !Kept[k] {
				delete(entry, k)
				continue
			}
			if k == FieldsKey {
				if set, ok := v.(map[string]any); ok {
					cut(set, 1)
				} else {
					delete(entry, k)
				}
			}
		}
	}
}

// cut drops what a field set at depth (1 for the top) keeps not.
func cut(set map[string]any, depth int) {
	for k, v := range set {
		if !IsField(k) {
			delete(set, k)
			continue
		}
		child, ok := v.(map[string]any)
		switch {
		case !ok:
			set[k] = map[string]any{}
		case depth == Depth:
			if len(child) > 0 {
				set[k] = map[string]any{}
			}
		default:
			cut(child, depth+1)
		}
	}
}

// Ownership is what a field set tells of a field: that it owns it, that
// it cannot tell, or that it does not.
type Ownership int

const (
	// NotOwned means the set owns neither the field nor one above or below it.
	NotOwned Ownership = iota
	// MaybeOwned means the path goes on where the set cannot tell one field
	// from its sibling: below Depth levels, under a list (whose items it
	// names by key), or under an atomic field (owned whole, as a leaf).
	// The set owns something there, the field or only a sibling of it.
	MaybeOwned
	// Owned means the set owns the field, or a field below it.
	Owned
)

// OwnershipOf says what the field set (an entry's fieldsV1, slim or
// whole) tells of the field at path, an RFC 6901 JSON Pointer
// ("/spec/replicas"); a slim field set and the whole one answer alike. An
// empty or missing field set owns nothing.
func OwnershipOf(set map[string]any, path string) Ownership {
	if !hasField(set) {
		return NotOwned
	}
	toks, deeper := tokens(path)
	node := set
	for _, token := range toks {
		if !hasField(node) {
			return MaybeOwned
		}
		child, ok := node["f:"+token].(map[string]any)
		if !ok {
			return NotOwned
		}
		node = child
	}
	if deeper {
		return MaybeOwned
	}
	return Owned
}

func hasField(set map[string]any) bool {
	for k := range set {
		if IsField(k) {
			return true
		}
	}
	return false
}

// tokens are the unescaped reference tokens of a JSON Pointer, at most
// Depth of them (a slim set keeps no more), and whether the path goes
// deeper.
func tokens(path string) ([]string, bool) {
	if path == "" {
		return nil, false
	}
	parts := strings.SplitN(strings.TrimPrefix(path, "/"), "/", Depth+1)
	deeper := len(parts) > Depth
	if deeper {
		parts = parts[:Depth]
	}
	for i, p := range parts {
		parts[i] = unescape.Replace(p)
	}
	return parts, deeper
}

var unescape = strings.NewReplacer("~1", "/", "~0", "~")

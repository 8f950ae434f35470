package diff

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// KeyTree says, for one kind, which lists are maps keyed by some of their
// items' fields (containers by name, ports by containerPort and protocol).
// It mirrors the object's shape; nil means "no keyed list below here".
type KeyTree struct {
	// Keys are the item fields that identify an item of this list.
	Keys []string
	// Fields are the schemas of an object's properties.
	Fields map[string]*KeyTree
	// Items is the schema of a list's items.
	Items *KeyTree
	// Values is the schema of a map's values (additionalProperties).
	Values *KeyTree
}

// field returns the subtree for a map key.
func (t *KeyTree) field(name string) *KeyTree {
	if t == nil {
		return nil
	}
	if f, ok := t.Fields[name]; ok {
		return f
	}
	return t.Values
}

// items returns the subtree for list items.
func (t *KeyTree) items() *KeyTree {
	if t == nil {
		return nil
	}
	return t.Items
}

// ListKeys provides the KeyTree of a kind; nil means every list of that
// kind is compared by position.
type ListKeys interface {
	KeyTree(gvk schema.GroupVersionKind) *KeyTree
}

// itemKeys returns, for a list whose items are identified by keys, each
// item's key string ("name=web", "containerPort=80,protocol=TCP") and
// true; false when an item lacks every key field or two items share a key,
// in which case the list is compared by position.
func itemKeys(list []any, keys []string) ([]string, bool) {
	if len(keys) == 0 {
		return nil, false
	}
	out := make([]string, len(list))
	seen := make(map[string]bool, len(list))
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, false
		}
		var key string
		for _, k := range keys {
			if v, ok := m[k]; ok {
				if key != "" {
					key += ","
				}
				key += k + "=" + keyValue(v)
			}
		}
		if key == "" || seen[key] {
			return nil, false
		}
		seen[key] = true
		out[i] = key
	}
	return out, true
}

// keyValue is a key field's value as %v prints it.
func keyValue(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case int64:
		return strconv.FormatInt(t, 10)
	}
	return fmt.Sprint(v)
}

// normalize turns each keyed list into a map from item key to item, so that
// r3labs/diff compares items by identity rather than position.
func normalize(v any, t *KeyTree) any {
	out, _ := normalizeValue(v, t)
	return out
}

func normalizeValue(v any, t *KeyTree) (any, bool) {
	if t == nil {
		return v, false
	}
	list, isList := v.([]any)
	if isList {
		if keys, ok := itemKeys(list, t.Keys); ok {
			m := make(map[string]any, len(list))
			for i, item := range list {
				m[keys[i]] = normalize(item, t.Items)
			}
			return m, true
		}
	}
	return rewriteChildren(v, func(key string, child any) (any, action) {
		sub := t.field(key)
		if isList {
			sub = t.items()
		}
		return changedTo(normalizeValue(child, sub))
	})
}

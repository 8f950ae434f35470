package diff

import (
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	r3diff "github.com/r3labs/diff/v3"

	"github.com/kubediff/kubediff/pkg/record"
)

// compare finds the changed fields. It descends through maps (and
// keyed lists, seen as maps) present on both sides and hands r3labs/diff
// only the smallest subtrees that differ: positional lists, and values that
// changed type. Equal subtrees cost one cheap comparison; status churn
// never touches spec.
func compare(oldObj, newObj map[string]any, tree *KeyTree) []record.FieldChange {
	var raw []rawChange
	diffTree(nil, oldObj, newObj, tree, &raw)
	changes := make([]record.FieldChange, 0, len(raw))
	memo := keyMemo{}
	for _, rc := range raw {
		// Values come from the objects, not from normalized space where a
		// keyed list is a map.
		ptr, field, from, to := memo.locate(rc.path, oldObj, newObj, tree, rc.op)
		fc := record.FieldChange{Op: rc.op, Path: FormatPointer(ptr), Field: field, From: from, To: to}
		if rc.op == record.OpAdd {
			fc.From = nil
		}
		if rc.op == record.OpRemove {
			fc.To = nil
		}
		changes = append(changes, fc)
	}
	sort.SliceStable(changes, func(i, j int) bool { return pointerLess(changes[i].Path, changes[j].Path) })
	return changes
}

func diffTree(prefix []string, o, n any, t *KeyTree, out *[]rawChange) {
	// Two maps are compared key by key below, each child once; comparing
	// them whole first would compare every subtree again at each level.
	if !bothMaps(o, n) && jsonEqual(o, n) {
		return
	}
	om, okO := asMap(o, t)
	nm, okN := asMap(n, t)
	if ol, nl, ok := sameLengthLists(o, n); ok && (!okO || !okN) {
		// Position by position, as r3labs would compare them, but only
		// descending into the items that differ.
		for i := range ol {
			diffTree(append(slices.Clip(prefix), strconv.Itoa(i)), ol[i], nl[i], t.items(), out)
		}
		return
	}
	if !okO || !okN {
		if _, isList := o.([]any); !isList {
			// A scalar, or a change of type: nothing for r3labs to find.
			*out = append(*out, rawChange{op: record.OpReplace, path: slices.Clone(prefix), from: o, to: n})
			return
		}
		for _, rc := range diffValues(normalize(o, t), normalize(n, t)) {
			rc.path = append(slices.Clip(prefix), rc.path...)
			*out = append(*out, rc)
		}
		return
	}
	_, isList := o.([]any)
	// Map order is random; compare sorts the changes afterwards.
	for key, ov := range om {
		nv, inNew := nm[key]
		if inNew && !bothMaps(ov, nv) && jsonEqual(ov, nv) {
			continue // most children: no path to build
		}
		path := append(slices.Clip(prefix), key)
		if !inNew {
			*out = append(*out, rawChange{op: record.OpRemove, path: path, from: ov})
			continue
		}
		child := t.field(key)
		if isList {
			child = t.items()
		}
		diffTree(path, ov, nv, child, out)
	}
	for key, nv := range nm {
		if _, inOld := om[key]; !inOld {
			*out = append(*out, rawChange{op: record.OpAdd, path: append(slices.Clip(prefix), key), to: nv})
		}
	}
}

func bothMaps(o, n any) bool {
	_, oMap := o.(map[string]any)
	_, nMap := n.(map[string]any)
	return oMap && nMap
}

func sameLengthLists(o, n any) ([]any, []any, bool) {
	ol, ok1 := o.([]any)
	nl, ok2 := n.([]any)
	return ol, nl, ok1 && ok2 && len(ol) == len(nl)
}

// asMap returns v as a map: a map as it is, a keyed list as a map from item
// key to item (so items are matched by identity, not position).
func asMap(v any, t *KeyTree) (map[string]any, bool) {
	switch val := v.(type) {
	case map[string]any:
		return val, true
	case []any:
		keys, ok := itemKeys(val, t.itemsKeys())
		if !ok {
			return nil, false
		}
		m := make(map[string]any, len(val))
		for i, item := range val {
			m[keys[i]] = item
		}
		return m, true
	}
	return nil, false
}

// jsonEqual compares decoded JSON values, much faster than reflect.DeepEqual
// for the maps, lists and scalars unstructured objects are made of.
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !jsonEqual(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case string, bool, int64, float64, nil:
		return a == b
	}
	return reflect.DeepEqual(a, b)
}

// rawChange is a change in normalized space: keyed list items appear as map
// entries named by their key ("name=web").
type rawChange struct {
	op       string
	path     []string
	from, to any
}

func diffValues(o, n any) []rawChange {
	cl, err := r3diff.Diff(o, n, r3diff.SliceOrdering(true), r3diff.AllowTypeMismatch(true))
	if err != nil {
		// r3labs only fails on types that JSON never produces; report the
		// subtree as replaced rather than lose the change.
		return []rawChange{{op: record.OpReplace, from: o, to: n}}
	}
	out := make([]rawChange, 0, len(cl))
	for _, ch := range cl {
		rc := rawChange{path: ch.Path, from: ch.From, to: ch.To}
		switch ch.Type {
		case r3diff.CREATE:
			rc.op, rc.from = record.OpAdd, nil
		case r3diff.DELETE:
			rc.op, rc.to = record.OpRemove, nil
		default:
			rc.op = record.OpReplace
		}
		out = append(out, rc)
	}
	return out
}

// locate maps a path in normalized space back to the objects: a JSON
// Pointer (a keyed item's index in the new object, or in the old one for a
// removal), a readable field (spec.containers[name=web].image), and the
// values found there in the old and new object.
func (memo keyMemo) locate(segs []string, oldRoot, newRoot map[string]any, tree *KeyTree, op string) (ptr []string, field string, oldVal, newVal any) {
	ptr = make([]string, 0, len(segs))
	var b strings.Builder
	var oldCur, newCur any = oldRoot, newRoot
	t := tree
	for _, seg := range segs {
		// Removed items are found where they were; others where they are.
		cur := newCur
		if op == record.OpRemove || cur == nil {
			cur = oldCur
		}
		list, isList := cur.([]any)
		if !isList {
			ptr = append(ptr, seg)
			writeKey(&b, seg)
			oldCur, newCur, t = child(oldCur, seg), child(newCur, seg), t.field(seg)
			continue
		}
		if keys, ok := memo.itemKeys(list, t.itemsKeys()); ok && memo.keyedOnBothSides(oldCur, newCur, t) {
			idx := slices.Index(keys, seg)
			ptr = append(ptr, strconv.Itoa(idx))
			b.WriteString("[" + seg + "]")
			oldCur, newCur = memo.keyedItem(oldCur, t.itemsKeys(), seg), memo.keyedItem(newCur, t.itemsKeys(), seg)
		} else {
			ptr = append(ptr, seg)
			b.WriteString("[" + seg + "]")
			oldCur, newCur = child(oldCur, seg), child(newCur, seg)
		}
		t = t.items()
	}
	return ptr, b.String(), oldCur, newCur
}

// keyedOnBothSides mirrors diffTree: a list is compared by key only when
// both its old and new forms can be keyed.
func (memo keyMemo) keyedOnBothSides(oldCur, newCur any, t *KeyTree) bool {
	for _, v := range []any{oldCur, newCur} {
		if list, ok := v.([]any); ok {
			if _, keyed := memo.itemKeys(list, t.itemsKeys()); !keyed {
				return false
			}
		}
	}
	return true
}

// itemsKeys returns the key fields of the list this node describes.
func (t *KeyTree) itemsKeys() []string {
	if t == nil {
		return nil
	}
	return t.Keys
}

func child(v any, seg string) any {
	switch t := v.(type) {
	case map[string]any:
		return t[seg]
	case []any:
		i, err := strconv.Atoi(seg)
		if err != nil || i < 0 || i >= len(t) {
			return nil
		}
		return t[i]
	}
	return nil
}

func (memo keyMemo) keyedItem(v any, keys []string, key string) any {
	list, ok := v.([]any)
	if !ok {
		return nil
	}
	itemKeys, ok := memo.itemKeys(list, keys)
	if !ok {
		return nil
	}
	if i := slices.Index(itemKeys, key); i >= 0 {
		return list[i]
	}
	return nil
}

// keyMemo remembers the item keys of each list met while locating one
// object's changes: each change's path would otherwise key the same lists
// (a Pod's containerStatuses, its conditions) again, five times a segment.
type keyMemo map[memoList]memoKeys

type memoList struct {
	first *any // the list's backing array
	len   int
}

type memoKeys struct {
	keys []string
	ok   bool
}

func (memo keyMemo) itemKeys(list []any, keys []string) ([]string, bool) {
	if len(list) == 0 {
		return itemKeys(list, keys)
	}
	id := memoList{&list[0], len(list)}
	if k, seen := memo[id]; seen {
		return k.keys, k.ok
	}
	k, ok := itemKeys(list, keys)
	memo[id] = memoKeys{k, ok}
	return k, ok
}

func writeKey(b *strings.Builder, key string) {
	if isPlainKey(key) {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(key)
		return
	}
	b.WriteString("[" + strconv.Quote(key) + "]")
}

package diff

import "strconv"

// action is what a rewrite does with one child of a map or list.
type action int

const (
	keep action = iota
	replace
	drop
)

// rewriteChildren applies fn to each child of a map or list and returns the
// result and whether anything changed. The container is copied only when a
// child is replaced or dropped, so objects from the watcher's cache are never
// modified and untouched subtrees stay shared. A dropped list item becomes
// nil, keeping later indices meaningful (nil equals nil on both sides).
func rewriteChildren(v any, fn func(key string, child any) (any, action)) (any, bool) {
	switch t := v.(type) {
	case map[string]any:
		var out map[string]any
		for k, child := range t {
			n, act := fn(k, child)
			if act == keep {
				continue
			}
			if out == nil {
				out = make(map[string]any, len(t))
				for k2, v2 := range t {
					out[k2] = v2
				}
			}
			if act == drop {
				delete(out, k)
			} else {
				out[k] = n
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	case []any:
		var out []any
		for i, child := range t {
			n, act := fn(strconv.Itoa(i), child)
			if act == keep {
				continue
			}
			if out == nil {
				out = append([]any(nil), t...)
			}
			if act == drop {
				out[i] = nil
			} else {
				out[i] = n
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	return v, false
}

// pathRules are parsed JSON Pointers where a segment "*" matches any map
// key or list index.
type pathRules [][]string

func parsePathRules(pointers []string) (pathRules, error) {
	var rules pathRules
	for _, p := range pointers {
		segs, err := ParsePointer(p)
		if err != nil {
			return nil, err
		}
		if len(segs) == 0 {
			return nil, errWholeObject(p)
		}
		rules = append(rules, segs)
	}
	return rules, nil
}

// applyRules rewrites every value the rules match with fn, which is told
// the value's key and may drop it. A map emptied by dropping (annotations
// holding only an ignored key) is dropped too, or its appearance would
// read as a change.
func applyRules(v any, rules pathRules, fn func(key string, v any) (any, action)) (any, bool) {
	if len(rules) == 0 {
		return v, false
	}
	return rewriteChildren(v, func(key string, child any) (any, action) {
		var deeper pathRules
		for _, r := range rules {
			if r[0] != "*" && r[0] != key {
				continue
			}
			if len(r) == 1 {
				return fn(key, child)
			}
			deeper = append(deeper, r[1:])
		}
		n, changed := applyRules(child, deeper, fn)
		if m, ok := n.(map[string]any); ok && changed && len(m) == 0 {
			return nil, drop
		}
		return changedTo(n, changed)
	})
}

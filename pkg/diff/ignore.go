package diff

import (
	"fmt"
	"strconv"
)

// DefaultIgnorePaths are fields whose changes carry no meaning for a reader:
// bookkeeping the API server or kubectl updates on every write.
var DefaultIgnorePaths = []string{
	"/metadata/managedFields",
	"/metadata/resourceVersion",
	"/metadata/generation",
	"/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration",
}

// ignoreRules is a set of parsed JSON Pointers, where a segment "*" matches
// any map key or list index.
type ignoreRules [][]string

func parseIgnoreRules(pointers []string) (ignoreRules, error) {
	var rules ignoreRules
	for _, p := range pointers {
		segs, err := ParsePointer(p)
		if err != nil {
			return nil, fmt.Errorf("ignore path: %w", err)
		}
		if len(segs) == 0 {
			return nil, fmt.Errorf("ignore path %q would ignore the whole object", p)
		}
		rules = append(rules, segs)
	}
	return rules, nil
}

// prune returns v without the fields the rules match. Maps and lists are
// copied only along the paths where something is removed, so the informer's
// cached objects are never modified and untouched subtrees are shared.
func prune(v any, rules ignoreRules) any {
	if len(rules) == 0 {
		return v
	}
	out, _ := pruneValue(v, rules)
	return out
}

func pruneValue(v any, rules ignoreRules) (any, bool) {
	switch t := v.(type) {
	case map[string]any:
		var out map[string]any
		for k, child := range t {
			newChild, drop, changed := pruneChild(child, k, rules)
			if !drop && !changed {
				continue
			}
			if out == nil {
				out = make(map[string]any, len(t))
				for k2, v2 := range t {
					out[k2] = v2
				}
			}
			if drop {
				delete(out, k)
			} else {
				out[k] = newChild
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	case []any:
		var out []any
		for i, child := range t {
			newChild, drop, changed := pruneChild(child, strconv.Itoa(i), rules)
			if !drop && !changed {
				continue
			}
			if out == nil {
				out = append([]any(nil), t...)
			}
			if drop {
				// Keep positions stable so that later indices still point
				// at the same items; nil compares equal on both sides.
				out[i] = nil
			} else {
				out[i] = newChild
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	return v, false
}

// pruneChild applies the rules to one child named key: drop it whole, or
// prune inside it with the rules' remaining segments.
func pruneChild(child any, key string, rules ignoreRules) (newChild any, drop, changed bool) {
	var deeper ignoreRules
	for _, r := range rules {
		if r[0] != "*" && r[0] != key {
			continue
		}
		if len(r) == 1 {
			return nil, true, false
		}
		deeper = append(deeper, r[1:])
	}
	if len(deeper) == 0 {
		return child, false, false
	}
	newChild, changed = pruneValue(child, deeper)
	// A map emptied by pruning (annotations holding only an ignored key)
	// goes too, or its appearance would read as a change.
	if m, ok := newChild.(map[string]any); ok && changed && len(m) == 0 {
		return nil, true, false
	}
	return newChild, false, changed
}

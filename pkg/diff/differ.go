package diff

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	r3diff "github.com/r3labs/diff/v3"

	"github.com/kubediff/kubediff/pkg/watcher"
)

// maxChangedFields caps the one-string summary; the changes list always
// carries every change.
const maxChangedFields = 50

// Options configure a Differ.
type Options struct {
	// IgnorePaths are JSON Pointers ignored on top of DefaultIgnorePaths.
	IgnorePaths []string
	// Now returns the record time; nil means time.Now.
	Now func() time.Time
}

// Differ turns events into change records.
type Differ struct {
	ignore ignoreRules
	now    func() time.Time
}

// New returns a Differ, or an error naming a malformed ignore path.
func New(opts Options) (*Differ, error) {
	rules, err := parseIgnoreRules(append(slices.Clone(DefaultIgnorePaths), opts.IgnorePaths...))
	if err != nil {
		return nil, err
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Differ{ignore: rules, now: now}, nil
}

// Diff returns the record for ev, and false when there is nothing worth
// reporting (an update whose only changes are ignored).
func (d *Differ) Diff(ev watcher.Event) (Change, bool) {
	obj := ev.Object()
	c := Change{
		Time:            Timestamp(d.now()),
		Type:            string(ev.Type),
		APIVersion:      obj.GetAPIVersion(),
		Kind:            obj.GetKind(),
		Resource:        ev.Resource.GVR.Resource,
		Namespace:       obj.GetNamespace(),
		Name:            obj.GetName(),
		UID:             string(obj.GetUID()),
		ResourceVersion: obj.GetResourceVersion(),
	}
	if ev.Type != watcher.Updated {
		return c, true
	}
	oldObj, _ := prune(ev.Old.Object, d.ignore).(map[string]any)
	newObj, _ := prune(ev.New.Object, d.ignore).(map[string]any)
	c.Changes = diffObjects(oldObj, newObj)
	if len(c.Changes) == 0 {
		return Change{}, false
	}
	c.Changed = summarize(c.Changes)
	return c, true
}

// diffObjects compares top-level fields first and runs the reflection-based
// r3labs/diff only on those that differ: status churn leaves spec and
// metadata alone, and those are most of an object.
func diffObjects(oldObj, newObj map[string]any) []FieldChange {
	var changes []FieldChange
	for _, key := range unionKeys(oldObj, newObj) {
		o, inOld := oldObj[key]
		n, inNew := newObj[key]
		switch {
		case !inOld:
			changes = append(changes, FieldChange{Op: OpAdd, Path: FormatPointer([]string{key}), To: n})
		case !inNew:
			changes = append(changes, FieldChange{Op: OpRemove, Path: FormatPointer([]string{key}), From: o})
		case !reflect.DeepEqual(o, n):
			changes = append(changes, diffValues([]string{key}, o, n)...)
		}
	}
	for i := range changes {
		segs, _ := ParsePointer(changes[i].Path)
		changes[i].Field = readableField(segs, indexChecker(segs, oldObj, newObj))
	}
	sort.SliceStable(changes, func(i, j int) bool { return pointerLess(changes[i].Path, changes[j].Path) })
	return changes
}

func diffValues(prefix []string, o, n any) []FieldChange {
	cl, err := r3diff.Diff(o, n, r3diff.SliceOrdering(true), r3diff.AllowTypeMismatch(true))
	if err != nil {
		// r3labs only fails on types that JSON never produces; report the
		// subtree as replaced rather than lose the change.
		return []FieldChange{{Op: OpReplace, Path: FormatPointer(prefix), From: o, To: n}}
	}
	out := make([]FieldChange, 0, len(cl))
	for _, ch := range cl {
		fc := FieldChange{Path: FormatPointer(append(slices.Clone(prefix), ch.Path...)), From: ch.From, To: ch.To}
		switch ch.Type {
		case r3diff.CREATE:
			fc.Op, fc.From = OpAdd, nil
		case r3diff.DELETE:
			fc.Op, fc.To = OpRemove, nil
		default:
			fc.Op = OpReplace
		}
		out = append(out, fc)
	}
	return out
}

// indexChecker reports which segments of a path are list indices, by
// walking the object that contains the path (new, or old for removals).
func indexChecker(segs []string, objs ...map[string]any) func(int) bool {
	isIndex := make([]bool, len(segs))
	for _, root := range objs {
		var cur any = root
		for i, s := range segs {
			switch t := cur.(type) {
			case map[string]any:
				cur = t[s]
			case []any:
				isIndex[i] = true
				idx, err := strconv.Atoi(s)
				if err != nil || idx < 0 || idx >= len(t) {
					cur = nil
				} else {
					cur = t[idx]
				}
			default:
				cur = nil
			}
		}
	}
	return func(i int) bool { return isIndex[i] }
}

func summarize(changes []FieldChange) string {
	var fields []string
	seen := map[string]bool{}
	for _, c := range changes {
		if seen[c.Field] {
			continue
		}
		seen[c.Field] = true
		fields = append(fields, c.Field)
	}
	if len(fields) > maxChangedFields {
		more := len(fields) - maxChangedFields
		fields = append(fields[:maxChangedFields], fmt.Sprintf("… and %d more", more))
	}
	return strings.Join(fields, ", ")
}

func unionKeys(a, b map[string]any) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// pointerLess orders pointers segment by segment, numbers numerically, so
// that /spec/containers/2 sorts before /spec/containers/10.
func pointerLess(a, b string) bool {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if as[i] == bs[i] {
			continue
		}
		ai, aerr := strconv.Atoi(as[i])
		bi, berr := strconv.Atoi(bs[i])
		if aerr == nil && berr == nil {
			return ai < bi
		}
		return as[i] < bs[i]
	}
	return len(as) < len(bs)
}

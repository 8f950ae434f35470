package diff

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/record"
)

// fuzzTree keys spec.items by name, so the fuzzer exercises keyed lists.
var fuzzTree = &KeyTree{Fields: map[string]*KeyTree{
	"spec": {Fields: map[string]*KeyTree{"items": {Keys: []string{"name"}, Items: &KeyTree{}}}},
}}

type fixedKeys struct{}

func (fixedKeys) KeyTree(schema.GroupVersionKind) *KeyTree { return fuzzTree }

// resolve follows an RFC 6901 pointer through decoded JSON.
func resolve(root any, pointer string) (any, bool) {
	segs, err := ParsePointer(pointer)
	if err != nil {
		return nil, false
	}
	cur := root
	for _, s := range segs {
		switch t := cur.(type) {
		case map[string]any:
			v, ok := t[s]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(t) {
				return nil, false
			}
			cur = t[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// FuzzDiff checks, for any pair of JSON objects, that every reported change
// points at a real place: its path resolves in the new object (or the old
// one for a removal) to exactly the value the change reports. (A replaced
// field's path holds the item's index in the new object, which can differ
// from the old one, so its From is not looked up by path.)
func FuzzDiff(f *testing.F) {
	f.Add(`{"spec":{"items":[{"name":"a","v":1},{"name":"b"}]},"data":{"a/b":"1","c~d":"x"}}`,
		`{"spec":{"items":[{"name":"z"},{"name":"a","v":2},{"name":"b"}]},"data":{"a/b":"2"}}`)
	f.Add(`{"spec":{"items":[{"name":"a"},{"name":"a"}]}}`, `{"spec":{"items":[{"name":"a"}]}}`)
	f.Add(`{"l":[1,2,3],"m":{"x":{"y":null}}}`, `{"l":[3],"m":"s"}`)
	f.Add(`{"spec":{"items":"x"}}`, `{"spec":{"items":[{"name":1},{"v":2}]}}`)
	long := strings.Repeat(`line\n`, maxValueBytes/5)
	f.Add(`{"data":{"k":"`+long+`a","l":["`+long+`"]}}`, `{"data":{"k":"`+long+`b","l":"`+long+`"}}`)
	d, err := New(Options{ListKeys: fixedKeys{}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		var oldObj, newObj map[string]any
		if json.Unmarshal([]byte(a), &oldObj) != nil || json.Unmarshal([]byte(b), &newObj) != nil || oldObj == nil || newObj == nil {
			return
		}
		for _, o := range []map[string]any{oldObj, newObj} {
			o["kind"], o["apiVersion"] = "Fuzz", "fuzz/v1"
		}
		c, ok := d.Diff(change.Event{Type: change.Updated, Old: &unstructured.Unstructured{Object: oldObj}, New: &unstructured.Unstructured{Object: newObj}})
		if !ok {
			if !reflect.DeepEqual(oldObj, newObj) {
				t.Fatalf("different objects gave no record:\n%s\n%s", a, b)
			}
			return
		}
		for _, ch := range c.Changes {
			if ch.Op == record.OpRemove {
				got, found := resolve(oldObj, ch.Path)
				if !found || !says(ch, got, ch.From, ch.FromBytes, ch.FromSHA256) {
					t.Fatalf("%s %s: old value %v (found %v), change says %v", ch.Op, ch.Path, got, found, ch.From)
				}
			}
			if ch.Op != record.OpRemove {
				got, found := resolve(newObj, ch.Path)
				if !found || !says(ch, got, ch.To, ch.ToBytes, ch.ToSHA256) {
					t.Fatalf("%s %s: new value %v (found %v), change says %v", ch.Op, ch.Path, got, found, ch.To)
				}
			}
		}
	})
}

// says reports whether a change describes value v: as it is, or, for a
// value too long to carry, by its size and hash.
func says(ch record.FieldChange, v, shown any, size *int, sha string) bool {
	if !ch.Truncated {
		return reflect.DeepEqual(v, shown)
	}
	n, h := digest(v)
	return size != nil && *size == *n && sha == h
}

package drift

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// absent stands for a field an object does not have, which differs from
// a field holding null.
type absentField struct{}

var absent any = absentField{}

// valueAt is the value at an RFC 6901 JSON Pointer in obj, or absent.
func valueAt(obj map[string]any, pointer string) any {
	if obj == nil {
		return absent
	}
	var node any = obj
	for _, token := range splitPointer(pointer) {
		switch n := node.(type) {
		case map[string]any:
			v, ok := n[token]
			if !ok {
				return absent
			}
			node = v
		case []any:
			i, err := strconv.Atoi(token)
			if err != nil || i < 0 || i >= len(n) {
				return absent
			}
			node = n[i]
		default:
			return absent
		}
	}
	return node
}

var unescape = strings.NewReplacer("~1", "/", "~0", "~")

func splitPointer(pointer string) []string {
	if pointer == "" || pointer == "/" {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(pointer, "/"), "/")
	for i, p := range parts {
		parts[i] = unescape.Replace(p)
	}
	return parts
}

// equal compares two values of objects decoded apart (the watch's
// decoder, encoding/json for last-applied-configuration): 2 and 2.0 are
// the same number.
func equal(a, b any) bool {
	if a == absent || b == absent {
		return a == b
	}
	if reflect.DeepEqual(a, b) {
		return true
	}
	if x, ok := number(a); ok {
		y, ok := number(b)
		return ok && x == y
	}
	switch a.(type) {
	case map[string]any, []any:
	default:
		return false // scalars of one decoder: DeepEqual said it
	}
	// Lists and objects from two decoders may differ only in how their
	// numbers are typed.
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var u, v any
	if json.Unmarshal(x, &u) != nil || json.Unmarshal(y, &v) != nil {
		return false
	}
	return reflect.DeepEqual(u, v)
}

// Bounds of a declared value on a record: the record's own values are
// bounded by the diff; a declared value is cut here alike.
const (
	maxDeclaredString = 256  // runes
	maxDeclaredJSON   = 1024 // bytes of a list's or an object's JSON
)

// bounded is v as a record carries it: a long string cut and marked
// "…", a large list or object left out; the bool says it was cut.
func bounded(v any) (any, bool) {
	switch x := v.(type) {
	case string:
		if r := []rune(x); len(r) > maxDeclaredString {
			return string(r[:maxDeclaredString]) + "…", true
		}
	case map[string]any, []any:
		b, err := json.Marshal(x)
		if err != nil || len(b) > maxDeclaredJSON {
			return nil, true
		}
	}
	return v, false
}

// number is v as a float64 when it is a number of either decoder.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case int:
		return float64(n), true
	}
	return 0, false
}

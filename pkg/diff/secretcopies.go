package diff

import (
	"encoding/base64"
	"strings"
)

// A Secret's values travel beyond data and stringData: tools copy the
// object into its annotations (kapp, kubectl; objectCopies hides the
// known ones whole), and people put a value into a label or annotation
// of their own. What is found there is redacted too.

// minContained is the shortest Secret value searched for inside a longer
// annotation: shorter ones ("1", "true") would hide unrelated text, and
// are still redacted where a value equals them.
const minContained = 4

// secretValues returns a Secret's values in every form they can be
// copied in: stringData's as written and base64-encoded, data's encoded
// and decoded.
func secretValues(obj any) []string {
	var values []string
	add := func(v string) {
		if v != "" && !isRedacted(v) {
			values = append(values, v)
		}
	}
	data, _ := nestedMap(obj, "data")
	for _, v := range data {
		if s, ok := v.(string); ok {
			add(s)
			if dec, err := base64.StdEncoding.DecodeString(s); err == nil {
				add(string(dec))
			}
		}
	}
	plain, _ := nestedMap(obj, "stringData")
	for _, v := range plain {
		if s, ok := v.(string); ok {
			add(s)
			add(base64.StdEncoding.EncodeToString([]byte(s)))
		}
	}
	return values
}

// redactCopiesOfValues redacts each label and annotation value of a
// Secret that holds one of its values, or that is a copy of an object
// (JSON, or YAML with data): such a copy may hold values the Secret no
// longer has.
func (o objectRedaction) redactCopiesOfValues(obj any, values []string) any {
	out, _ := rewriteChildren(obj, func(key string, meta any) (any, action) {
		if key != "metadata" {
			return meta, keep
		}
		return changedTo(rewriteChildren(meta, func(key string, m any) (any, action) {
			if key != "labels" && key != "annotations" {
				return m, keep
			}
			return changedTo(rewriteChildren(m, func(name string, v any) (any, action) {
				if s, ok := v.(string); ok && (holdsAny(s, values) || looksLikeObjectCopy(s)) {
					return o.replace(key+"/"+name, v)
				}
				return v, keep
			}))
		}))
	})
	return out
}

func holdsAny(s string, values []string) bool {
	for _, v := range values {
		if s == v || (len(v) >= minContained && strings.Contains(s, v)) {
			return true
		}
	}
	return false
}

// looksLikeObjectCopy recognises a serialized object in an annotation: a
// JSON object, or YAML naming data or stringData.
func looksLikeObjectCopy(s string) bool {
	t := strings.TrimSpace(s)
	return strings.HasPrefix(t, "{") || strings.Contains(t, "data:") || strings.Contains(t, "Data:")
}

package diff

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/kubediff/kubediff/pkg/record"
)

const (
	// maxValueBytes is the longest string a record carries whole. Config
	// files in ConfigMaps are mostly well under 4 KiB and stay whole;
	// longer values are data (bundles, dashboards, certificate chains)
	// whose full text helps no reader, while carrying it made a
	// one-character change in a 1 MB value a 2 MB record, held in every
	// sink's queue and in a follower's held records, and posted whole to
	// webhooks.
	maxValueBytes = 4 << 10
	// excerptBytes is how much of a longer string a record keeps: the
	// first difference and the text after it.
	excerptBytes = 1 << 10
	// excerptContext is how much of an excerpt comes before the first
	// difference: little, so the change stays in view where a value is
	// shown on one short line (text output shows 120 characters).
	excerptContext = 64
	// lineExcerptBytes is the longest multi-line string whose line diff
	// a record calls whole (not Truncated): its hunks then show every
	// line. A record carries no value beside a line diff: the values, in
	// full and then as excerpts, made a one-line change in a 1.7 KB
	// config file a 4.5 KB and then a 1.7 KB record. The full values are
	// in the history (`kubediff get --at`).
	lineExcerptBytes = 256
)

// condense runs after compare, on redacted values (a redacted value is one
// line of hash, so it never gets a line diff and never needs cutting). It
// gives each replaced string holding several lines a line diff, then cuts
// every string longer than maxValueBytes to an excerpt around the first
// difference, noting the full values' sizes and hashes.
func condense(changes []record.FieldChange) {
	for i := range changes {
		fc := &changes[i]
		from, fromString := fc.From.(string)
		to, toString := fc.To.(string)
		if fc.Op == record.OpReplace && fromString && toString && (strings.Contains(from, "\n") || strings.Contains(to, "\n")) {
			// The hunks are the excerpt: the values beside them would
			// carry the changed lines a second time. Sizes and hashes say
			// the rest; the full values are in the history.
			fc.Lines = lineDiff(from, to)
			fc.Truncated = len(from) > lineExcerptBytes || len(to) > lineExcerptBytes
			fc.FromBytes, fc.FromSHA256 = digest(from)
			fc.ToBytes, fc.ToSHA256 = digest(to)
			fc.From, fc.To = nil, nil
			continue
		}
		if !hasLong(fc.From) && !hasLong(fc.To) {
			continue
		}
		fc.Truncated = true
		if fc.Op != record.OpAdd {
			fc.FromBytes, fc.FromSHA256 = digest(fc.From)
		}
		if fc.Op != record.OpRemove {
			fc.ToBytes, fc.ToSHA256 = digest(fc.To)
		}
		fc.From, fc.To = bounded(fc.From, fc.To), bounded(fc.To, fc.From)
	}
}

// digest returns a value's size and the first 8 bytes of its SHA-256, in
// hex: of a string's bytes, else of its compact JSON.
func digest(v any) (*int, string) {
	b, err := json.Marshal(v)
	if s, ok := v.(string); ok {
		b, err = []byte(s), nil
	}
	if err != nil {
		return nil, ""
	}
	n := len(b)
	sum := sha256.Sum256(b)
	return &n, hex.EncodeToString(sum[:8])
}

// hasLong reports whether v holds a string longer than maxValueBytes.
func hasLong(v any) bool {
	switch t := v.(type) {
	case string:
		return len(t) > maxValueBytes
	case map[string]any:
		for _, x := range t {
			if hasLong(x) {
				return true
			}
		}
	case []any:
		for _, x := range t {
			if hasLong(x) {
				return true
			}
		}
	}
	return false
}

// bounded returns a copy of v with every string longer than maxValueBytes
// cut to an excerpt. other is the value on the other side of the change
// (nil if none): a string is cut around its first difference from the
// string at the same place there, so the excerpt shows what changed.
// Callers check hasLong first: bounded copies every map and list.
func bounded(v, other any) any {
	switch t := v.(type) {
	case string:
		if len(t) <= maxValueBytes {
			return t
		}
		o, _ := other.(string)
		return excerpt(t, o, excerptBytes)
	case map[string]any:
		om, _ := other.(map[string]any)
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = bounded(x, om[k])
		}
		return out
	case []any:
		ol, _ := other.([]any)
		out := make([]any, len(t))
		for i, x := range t {
			var o any
			if i < len(ol) {
				o = ol[i]
			}
			out[i] = bounded(x, o)
		}
		return out
	}
	return v
}

// boundedObjects cuts long strings in two whole objects for the unified
// style, which would otherwise show them whole. Strings are paired by
// place, so in a keyed list whose items moved an unchanged long string may
// be cut differently on each side and show as changed: a rare and
// harmless cost next to printing a megabyte.
func boundedObjects(oldObj, newObj map[string]any) (map[string]any, map[string]any) {
	if !hasLong(oldObj) && !hasLong(newObj) {
		return oldObj, newObj
	}
	o, _ := bounded(oldObj, newObj).(map[string]any)
	n, _ := bounded(newObj, oldObj).(map[string]any)
	return o, n
}

// valueAt returns the value an RFC 6901 pointer names in root, or nil.
func valueAt(root any, pointer string) any {
	segs, err := ParsePointer(pointer)
	if err != nil {
		return nil
	}
	for _, s := range segs {
		root = child(root, s)
	}
	return root
}

// excerpt returns s, if at most limit bytes, else about limit bytes of
// it around where it differs from other (from its start if other is equal
// or no string), marked with "…" where it was cut. Cut against each other,
// two strings keep the same text before and after the part that differs,
// so their excerpts differ only where the values do. Where s holds lines,
// cuts fall at line ends when one is near. The result never shares memory
// with a cut s, so a record does not keep a long value alive.
func excerpt(s, other string, limit int) string {
	if len(s) <= limit {
		return s
	}
	if s == other {
		return cut(s, 0, limit)
	}
	head := commonPrefix(s, other)
	tail := commonSuffix(s[head:], other[head:])
	start := max(0, head-excerptContext)
	if i := strings.LastIndexByte(s[max(0, start-excerptContext):start], '\n'); i >= 0 {
		start = max(0, start-excerptContext) + i + 1
	}
	// The same number of bytes after the differing part on both sides:
	// what the longer of the two parts leaves of the limit.
	part := max(len(s), len(other)) - tail - head
	end := min(len(s), start+limit, len(s)-tail+max(0, limit-(head-start)-part))
	if i := strings.LastIndexByte(s[max(start, end-excerptContext):end], '\n'); i >= 0 && end < len(s) {
		end = max(start, end-excerptContext) + i + 1
	}
	return cut(s, start, end)
}

// cut returns s[start:end], both moved inwards to a rune boundary, with
// "…" where it cut s.
func cut(s string, start, end int) string {
	for start < end && !utf8.RuneStart(s[start]) {
		start++
	}
	for end > start && end < len(s) && !utf8.RuneStart(s[end]) {
		end--
	}
	out := s[start:end]
	if start > 0 {
		out = "…" + out
	}
	if end < len(s) {
		out += "…"
	}
	return out
}

// commonPrefix returns the length in bytes of a's and b's common prefix.
func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// commonSuffix returns the length in bytes of a's and b's common suffix.
func commonSuffix(a, b string) int {
	n := min(len(a), len(b))
	for i := 1; i <= n; i++ {
		if a[len(a)-i] != b[len(b)-i] {
			return i - 1
		}
	}
	return n
}

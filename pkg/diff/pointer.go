package diff

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ParsePointer splits an RFC 6901 JSON Pointer into unescaped segments.
func ParsePointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("JSON Pointer %q must start with /", p)
	}
	segs := strings.Split(p[1:], "/")
	for i, s := range segs {
		// Order matters: ~01 is "~1" literally, not "/".
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return segs, nil
}

// FormatPointer joins segments into an RFC 6901 JSON Pointer.
func FormatPointer(segs []string) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

var plainKey = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$-]*$`)

// readableField renders segments as a field path a person reads at a
// glance: spec.containers[0].image, metadata.labels["app.kubernetes.io/name"].
// isIndex says which segments are list indices rather than map keys.
func readableField(segs []string, isIndex func(i int) bool) string {
	var b strings.Builder
	for i, s := range segs {
		switch {
		case isIndex(i):
			b.WriteString("[" + s + "]")
		case plainKey.MatchString(s):
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s)
		default:
			b.WriteString("[" + strconv.Quote(s) + "]")
		}
	}
	return b.String()
}

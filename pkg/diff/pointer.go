package diff

import (
	"fmt"
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

// isPlainKey says whether a readable field shows a map key without
// quotes: it matches ^[A-Za-z_$][A-Za-z0-9_$-]*$ (checked by hand: a
// regular expression was a tenth of a Pod's diff).
func isPlainKey(key string) bool {
	for i := 0; i < len(key); i++ {
		c := key[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '-')) {
			return false
		}
	}
	return key != ""
}

package diff

import (
	"fmt"
	"regexp"
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

// plainKey matches map keys a readable field shows without quotes.
var plainKey = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$-]*$`)

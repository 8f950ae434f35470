package stdout

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"github.com/kubediff/kubediff/pkg/notify/visible"
)

// printable makes a string from the cluster (a name, a key, a field
// manager, a value) safe to print to a terminal (see package visible):
// only kubediff's own colour codes reach the terminal.
func printable(s string) string { return visible.String(s) }

// printableLine is printable for a line of a value or of a unified diff,
// keeping its tabs.
func printableLine(s string) string { return visible.Line(s) }

// jsonSafe rewrites DEL, the C1 controls (U+0080 to U+009F) and the
// bidirectional formatting characters in an encoded JSON line as \u
// escapes: encoding/json escapes only C0, and JSON is printed to
// terminals too (it is the default output). Outside strings JSON holds
// only ASCII, so only strings change, and they decode as before.
func jsonSafe(line []byte) []byte {
	if !mayNeedEscape(line) {
		return line
	}
	var out []byte // made at the first rune rewritten
	copied := 0
	for i := 0; i < len(line); {
		if line[i] < 0x7f { // ASCII; C0 is escaped already, but for the line's end
			i++
			continue
		}
		r, size := utf8.DecodeRune(line[i:])
		if r != utf8.RuneError && visible.Unsafe(r, false) {
			if out == nil {
				out = make([]byte, 0, len(line)+16)
			}
			out = fmt.Appendf(append(out, line[copied:i]...), `\u%04x`, r)
			copied = i + size
		}
		i += size
	}
	if out == nil {
		return line
	}
	return append(out, line[copied:]...)
}

// mayNeedEscape reports whether line holds a byte that starts a rune
// jsonSafe rewrites (DEL; C1 from 0xc2; U+061C from 0xd8; the other bidi
// controls from 0xe2), each looked for with a vectorised IndexByte.
func mayNeedEscape(line []byte) bool {
	for _, b := range []byte{0x7f, 0xc2, 0xd8, 0xe2} {
		if bytes.IndexByte(line, b) >= 0 {
			return true
		}
	}
	return false
}

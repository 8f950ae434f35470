package stdout

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// printable makes a string from the cluster (a name, a key, a field
// manager, a value) safe to print to a terminal: every control character
// (C0, DEL, C1), every bidirectional formatting character and every byte
// that is not UTF-8 is written as a Go escape (\x1b, \r, \u009b, \u202e,
// \x9b), as strconv.Quote writes it. Otherwise a cluster could clear the
// reader's screen, overwrite what was printed (\r), set their clipboard
// (OSC 52) or reorder the text (a right-to-left override); only
// kubediff's own colour codes reach the terminal.
func printable(s string) string { return escape(s, false) }

// printableLine is printable for a line of a value or of a unified diff,
// keeping its tabs: they indent config files and move no more than the
// cursor to the next tab stop.
func printableLine(s string) string { return escape(s, true) }

func escape(s string, keepTabs bool) string {
	unsafe := func(r rune) bool { return isUnsafe(r, keepTabs) }
	if utf8.ValidString(s) && !strings.ContainsFunc(s, unsafe) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafe(r):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func isUnsafe(r rune, keepTabs bool) bool {
	if r == '\t' {
		return !keepTabs
	}
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}

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
		if r != utf8.RuneError && isUnsafe(r, false) {
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

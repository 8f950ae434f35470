package stdout

import (
	"fmt"
	"slices"
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
	// Each rune rewritten starts with one of these bytes in UTF-8.
	if !slices.ContainsFunc(line, func(b byte) bool { return b == 0x7f || b == 0xc2 || b == 0xd8 || b == 0xe2 }) {
		return line
	}
	out := make([]byte, 0, len(line)+16)
	for i := 0; i < len(line); {
		r, size := utf8.DecodeRune(line[i:])
		// C0 is escaped already, but for the line's end.
		if r >= 0x7f && r != utf8.RuneError && isUnsafe(r, false) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, line[i:i+size]...)
		}
		i += size
	}
	return out
}

// Package visible makes text a cluster wrote safe to show to people (on a
// terminal, in a chat message): every control character (C0, DEL, C1),
// every bidirectional formatting character and every byte that is not
// UTF-8 is written as a Go escape (\x1b, \r, \u009b, \u202e, \x9b), as
// strconv.Quote writes it. Otherwise a cluster could clear a reader's
// screen, overwrite what was printed (\r), set their clipboard (OSC 52),
// reorder the text (a right-to-left override) or break a chat message's
// layout with its own line breaks.
package visible

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// String escapes s as the package says, tabs included.
func String(s string) string { return escape(s, false) }

// Line is String for a line of a value or of a unified diff, keeping its
// tabs: they indent config files and move no more than to the next tab
// stop.
func Line(s string) string { return escape(s, true) }

// Unsafe reports whether r is written as an escape (a tab only when
// keepTabs is false).
func Unsafe(r rune, keepTabs bool) bool {
	if r == '\t' {
		return !keepTabs
	}
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}

func escape(s string, keepTabs bool) string {
	unsafe := func(r rune) bool { return Unsafe(r, keepTabs) }
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

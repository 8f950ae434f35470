package cli

import (
	"fmt"
	"strconv"
	"strings"
)

// Bounds on what an error message quotes back to the user: a value from
// a config file or a flag can be megabytes (a 20 MB config value was once
// echoed whole into the terminal), and the key's name and what is wanted
// say all the user needs.
const (
	maxQuoted   = 80   // bytes of one quoted value kept
	maxErrorLen = 2000 // bytes of the whole message kept
)

// shortenError caps what a message quotes: every Go-quoted value longer
// than maxQuoted is cut and says how long it was, and the message as a
// whole is cut at maxErrorLen.
func shortenError(msg string) string {
	var b strings.Builder
	for len(msg) > 0 {
		i := strings.IndexByte(msg, '"')
		if i < 0 {
			b.WriteString(msg)
			break
		}
		b.WriteString(msg[:i])
		quoted, err := strconv.QuotedPrefix(msg[i:])
		if err != nil {
			b.WriteByte('"')
			msg = msg[i+1:]
			continue
		}
		b.WriteString(shortenQuoted(quoted))
		msg = msg[i+len(quoted):]
	}
	out := b.String()
	if len(out) > maxErrorLen {
		out = fmt.Sprintf("%s… (%d bytes more)", strings.ToValidUTF8(out[:maxErrorLen], ""), len(out)-maxErrorLen)
	}
	return out
}

// shortenQuoted cuts one quoted value to maxQuoted bytes of its text.
func shortenQuoted(quoted string) string {
	if len(quoted) <= maxQuoted+2 {
		return quoted
	}
	text, err := strconv.Unquote(quoted)
	if err != nil || len(text) <= maxQuoted {
		return quoted
	}
	cut := strings.ToValidUTF8(text[:maxQuoted], "")
	return fmt.Sprintf("%q… (%d bytes)", cut, len(text))
}

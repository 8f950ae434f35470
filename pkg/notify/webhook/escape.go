package webhook

import (
	"strings"
)

// escaper makes text the cluster wrote (already free of control
// characters, see package visible) show as it is in one service's
// markup: text for prose (titles, managers), code for changes.
type escaper struct {
	text func(string) string
	code func(string) string
}

// codeBreaker puts a zero-width space after "<", so that Google Chat's
// <users/all> or <url|text> written by the cluster shows as written but
// neither mentions nor links: they have no escape. Code needs no more:
// Discord and Mattermost find no mention in it.
var codeBreaker = strings.NewReplacer("<", "<\u200b")

// markdownText is backslash-escaped in Discord's and Mattermost's
// Markdown: emphasis, code, strike-through, spoilers, links, headings,
// quotes, list markers, emoji (":name:") and HTML.
var markdownText = strings.NewReplacer(
	`\`, `\\`, "*", `\*`, "_", `\_`, "~", `\~`, "`", "\\`", "|", `\|`, "[", `\[`, "]", `\]`,
	"(", `\(`, ")", `\)`, "<", `\<`, ">", `\>`, "#", `\#`, ":", `\:`, "-", `\-`, "+", `\+`,
	// Mattermost finds mentions in the text on its server, escaped or not.
	"@", "@\u200b",
)

// markdown is Discord's and Mattermost's: prose escaped with backslashes,
// changes in code, where Markdown shows everything as written but the
// backtick that would end it.
var markdown = escaper{text: markdownText.Replace, code: codeSpan}

// googleChat is Google Chat's markup, which has no escape character:
// everything the cluster wrote is in monospace, whose only markup is the
// backtick that ends it.
var googleChat = escaper{text: codeSpan, code: codeSpan}

// codeSpan puts s in inline code, or in a code block when it has several
// lines; the backticks that would end either are written as quotes.
func codeSpan(s string) string {
	s = codeBreaker.Replace(s)
	if strings.Contains(s, "\n") {
		return "```\n" + strings.ReplaceAll(s, "```", "'''") + "\n```"
	}
	return "`" + strings.ReplaceAll(s, "`", "'") + "`"
}

// adaptiveCard is a TextBlock's text: the Markdown subset Adaptive Cards
// render (emphasis, links, lists at a line's start) is escaped with
// backslashes, as CommonMark reads them, and "{{" is broken, since
// {{DATE(…)}} and {{TIME(…)}} in a TextBlock are functions. A change's
// line keeps its indentation as no-break spaces, which Markdown does not
// strip.
var adaptiveCard = escaper{
	text: cardText,
	code: func(s string) string {
		trimmed := strings.TrimLeft(s, " ")
		return strings.Repeat("\u00a0", len(s)-len(trimmed)) + cardText(trimmed)
	},
}

var cardMarkdown = strings.NewReplacer(
	`\`, `\\`, "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "(", `\(`, ")", `\)`, "`", "\\`",
	"~", `\~`, "<", `\<`, ">", `\>`, "{{", "{\u200b{",
)

func cardText(s string) string {
	s = cardMarkdown.Replace(s)
	// A list marker or a heading counts only at the start of a line.
	if s != "" && strings.ContainsRune("-+#", rune(s[0])) {
		return `\` + s
	}
	if digits := len(s) - len(strings.TrimLeft(s, "0123456789")); digits > 0 && strings.HasPrefix(s[digits:], ".") {
		return s[:digits] + `\` + s[digits:]
	}
	return s
}

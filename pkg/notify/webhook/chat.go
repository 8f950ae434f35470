package webhook

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/kubediff/kubediff/pkg/notify/visible"
	"github.com/kubediff/kubediff/pkg/record"
)

// View is what a chat preset's template lays out: one section per
// record, in plain text from the cluster that the template
// escapes for its service (esc, code). Every string has been through
// package visible already: no control character is left in it.
type View struct {
	Sections []Section
	// Omitted counts the change lines left out so that the message fits
	// the service's limit; the template says so.
	Omitted int
	// Service and Limit name the limit, for that note.
	Service string
	Limit   int
}

// Section is one record.
type Section struct {
	// Title is "updated Deployment prod/web".
	Title string
	// Detail is the API version and who made the change, the user and
	// the field manager as far as known: "apps/v1 by alice
	// (kubectl-edit)", "apps/v1 by kubectl-edit", then the summary of
	// the most severe rule the record matched, when it has one.
	Detail string
	// Access are the sentences of what access an RBAC change gave or
	// took away ("alice gains cluster-admin through ClusterRoleBinding
	// x"), the most dangerous first; shown before Lines, and kept when
	// lines must be left out, before any of them.
	Access []string
	// Lines are the readable changes, one per field ("~ spec.replicas: 1
	// → 3", "+ field: value", "- field: old value"); a replaced
	// multi-line string's line holds its hunks after a newline.
	Lines []string
	// Record is the record itself, for a body template's own layout
	// (values redacted as in every record; escape them for the target).
	Record record.Change
}

// Chat text limits kubediff sets itself, so that one field or one title
// leaves room for the others: the services' own limits are per preset.
const (
	maxTitle      = 150 // runes, as Slack's header
	maxValue      = 200 // runes of one value in a change line
	maxHunkLines  = 30  // lines of one field's hunks
	maxHunkLine   = 200 // runes of one hunk line
	maxChatDetail = 200 // runes of the version and manager, of an Event's line
	// maxChatSummary bounds a rule's summary: with the title and detail
	// escaped (at most doubled), it fits the smallest service's message
	// (Discord's 2000 characters), so a record is never refused for it.
	maxChatSummary = 500
	maxAccess      = 300 // runes of one sentence of access
)

// recordSection is c as a section.
func recordSection(c record.Change) Section {
	detail := c.APIVersion
	if who := c.By(); who != "" {
		detail += " by " + who
	}
	for _, note := range c.Circumstances() {
		detail += " " + note
	}
	if c.GitOps != nil {
		detail += " — " + c.GitOps.String()
	}
	detail = cutNoted(visible.String(detail), maxChatDetail)
	if c.Summary != "" {
		// The rule's summary is the alert: it gets its own share, so a
		// long name before it cannot push it out.
		detail += " — " + cutNoted(visible.String(c.Summary), maxChatSummary)
	}
	title := fmt.Sprintf("%s %s %s", c.Type, c.Kind, c.ObjectName())
	if j := c.Judgement(); j != "" {
		title = "[" + j + "] " + title
	}
	s := Section{
		Title:  cutNoted(visible.String(title), maxTitle),
		Detail: detail,
		Record: c,
	}
	for _, sentence := range c.Access {
		s.Access = append(s.Access, cut(visible.String(sentence), maxAccess))
	}
	for _, fc := range record.CondenseConditions(c.Changes) {
		s.Lines = append(s.Lines, changeLine(fc))
	}
	if c.Event != nil {
		s.Lines = append(s.Lines, cutNoted(visible.String(c.Event.String()), maxChatDetail))
	}
	return s
}

// changeLine is one change as text output writes it, with values as
// JSON cut to maxValue runes and a note of the sizes of values the
// record carries only in part.
func changeLine(fc record.FieldChange) string {
	field := visible.String(fc.Field)
	switch {
	case fc.Op == record.OpAdd:
		return "+ " + field + ": " + chatValue(fc.To) + cutNote(fc)
	case fc.Op == record.OpRemove:
		return "- " + field + ": " + chatValue(fc.From) + cutNote(fc)
	case fc.Lines != nil:
		return "~ " + field + fmt.Sprintf(": %d lines → %d lines", fc.Lines.FromLines, fc.Lines.ToLines) + cutNote(fc) + "\n" + hunks(fc.Lines)
	}
	return "~ " + field + ": " + chatValue(fc.From) + " → " + chatValue(fc.To) + cutNote(fc)
}

// cutNote names the full sizes of values the record holds only in part.
func cutNote(fc record.FieldChange) string {
	if !fc.Truncated {
		return ""
	}
	if fc.Lines != nil {
		return " (" + fc.Sizes() + ")"
	}
	return " (cut from " + fc.Sizes() + ")"
}

// hunks are a line diff's hunks, at most maxHunkLines lines, each cut to
// maxHunkLine runes, with a note when lines were left out.
func hunks(d *record.LineDiff) string {
	var lines []string
	more := d.Truncated
	for _, h := range d.Hunks {
		for _, line := range append([]string{h.Header()}, h.Lines...) {
			if len(lines) == maxHunkLines {
				more = true
				break
			}
			lines = append(lines, cut(visible.Line(line), maxHunkLine))
		}
	}
	if more {
		lines = append(lines, "… more changed lines not shown")
	}
	return strings.Join(lines, "\n")
}

// chatValue is a value as JSON, cut to maxValue runes. HTML is not
// escaped (\u003c would read badly): each preset escapes for its service.
func chatValue(v any) string {
	if str, ok := v.(string); ok {
		v = cut(str, maxValue) // before encoding: a value may be megabytes
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return cut(visible.String(fmt.Sprint(v)), maxValue)
	}
	return cut(visible.String(strings.TrimSuffix(b.String(), "\n")), maxValue)
}

// cut shortens s to n runes, ending with "…" when it was cut, reading
// no further into s than that.
func cut(s string, n int) string {
	end, runes := 0, 0 // end: where the first n-1 runes end
	for i := range s {
		if runes == n-1 {
			end = i
		}
		if runes == n {
			return s[:end] + "…"
		}
		runes++
	}
	return s
}

// cutNoted shortens s to n runes, the last of them a note of how many
// were left out ("… (cut: 12437 characters more)"), so that a reader
// knows the text goes on; s as it is when it fits.
func cutNoted(s string, n int) string {
	total := utf8.RuneCountInString(s)
	if total <= n {
		return s
	}
	note := func(left int) string { return fmt.Sprintf("… (cut: %d characters more)", left) }
	k := max(n-utf8.RuneCountInString(note(total)), 0) // the note is longest when all is cut
	end := 0
	for range k {
		_, w := utf8.DecodeRuneInString(s[end:])
		end += w
	}
	return s[:end] + note(total-k)
}

// keep returns sections with only their first n lines in all (a
// section's sentences of access, then its change lines), and how many
// were left out.
func keep(secs []Section, n int) ([]Section, int) {
	out := make([]Section, len(secs))
	omitted := 0
	for i, s := range secs {
		k := min(len(s.Access), n)
		n -= k
		omitted += len(s.Access) - k
		s.Access = s.Access[:k]
		k = min(len(s.Lines), n)
		n -= k
		omitted += len(s.Lines) - k
		s.Lines = s.Lines[:k]
		out[i] = s
	}
	return out, omitted
}

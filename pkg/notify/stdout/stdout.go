// Package stdout writes change records to a stream, as JSON lines for
// machines or as short coloured text for people.
package stdout

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/kubediff/kubediff/pkg/record"
)

// Sink writes each record to a writer. It is not safe for concurrent use;
// a notify.Queue gives it one writer goroutine.
type Sink struct {
	w      *bufio.Writer
	encode func(w *bufio.Writer, c record.Change) error
}

// NewJSON returns a sink writing one JSON object per line.
func NewJSON(w io.Writer) *Sink {
	return &Sink{w: bufio.NewWriter(w), encode: encodeJSON}
}

// NewText returns a sink writing a header line per record and a line per
// changed field, with ANSI colours when color is true.
func NewText(w io.Writer, color bool) *Sink {
	p := palette{}
	if color {
		p = ansiPalette
	}
	return &Sink{w: bufio.NewWriter(w), encode: func(w *bufio.Writer, c record.Change) error {
		return encodeText(w, c, p)
	}}
}

// Notify implements notify.Notifier. Each record is flushed at once so a
// reader (a terminal, a log shipper) sees it without delay.
func (s *Sink) Notify(_ context.Context, c record.Change) error {
	if err := s.encode(s.w, c); err != nil {
		return err
	}
	return s.w.Flush()
}

func encodeJSON(w *bufio.Writer, c record.Change) error {
	enc := json.NewEncoder(w)
	// Values are shown as they are: "<none>" rather than "\u003cnone\u003e".
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c); err != nil {
		return fmt.Errorf("encode record: %w", err)
	}
	return nil
}

// maxTextValue keeps one changed field on one readable line; the JSON
// output carries more (values up to 4 KiB whole, longer ones cut around
// the change).
const maxTextValue = 120

type palette struct{ reset, bold, dim, green, yellow, red string }

var ansiPalette = palette{
	reset: "\x1b[0m", bold: "\x1b[1m", dim: "\x1b[2m",
	green: "\x1b[32m", yellow: "\x1b[33m", red: "\x1b[31m",
}

func encodeText(w *bufio.Writer, c record.Change, p palette) error {
	typeColor := map[string]string{"added": p.green, "updated": p.yellow, "deleted": p.red}[c.Type]
	name := c.ObjectName()
	by := ""
	if c.Manager != nil {
		by = " " + p.dim + "by " + c.Manager.Name + p.reset
	}
	if c.AfterGap {
		by += " " + p.dim + "(seen after a gap)" + p.reset
	}
	fmt.Fprintf(w, "%s%s%s %s%-7s%s %s%s %s%s%s\n",
		p.dim, c.Time, p.reset, typeColor, c.Type, p.reset, p.bold, c.Kind, name, p.reset, by)
	if c.Unified != "" {
		return writeUnified(w, c.Unified, p)
	}
	for _, fc := range record.CondenseConditions(c.Changes) {
		switch {
		case fc.Op == record.OpAdd:
			fmt.Fprintf(w, "  %s+ %s: %s%s%s\n", p.green, fc.Field, textValue(fc.To), sizes(fc), p.reset)
		case fc.Op == record.OpRemove:
			fmt.Fprintf(w, "  %s- %s: %s%s%s\n", p.red, fc.Field, textValue(fc.From), sizes(fc), p.reset)
		case fc.Lines != nil:
			writeLines(w, fc, p)
		default:
			fmt.Fprintf(w, "  %s~ %s: %s → %s%s%s\n", p.yellow, fc.Field, textValue(fc.From), textValue(fc.To), sizes(fc), p.reset)
		}
	}
	return nil
}

// writeLines shows a replaced multi-line string as its line counts and
// then its hunks, indented under the field, as a unified diff reads:
// the strings themselves, cut to one line, would hide the change.
func writeLines(w *bufio.Writer, fc record.FieldChange, p palette) {
	fmt.Fprintf(w, "  %s~ %s: %d lines → %d lines%s%s\n", p.yellow, fc.Field, fc.Lines.FromLines, fc.Lines.ToLines, sizes(fc), p.reset)
	for _, h := range fc.Lines.Hunks {
		writeDiffLine(w, "    ", h.Header(), p)
		for _, line := range h.Lines {
			writeDiffLine(w, "    ", printable(line), p)
		}
	}
	if fc.Lines.Truncated {
		fmt.Fprintf(w, "    %s… more changed lines not shown%s\n", p.dim, p.reset)
	}
}

// sizes is " (cut from 1.0 MiB → 1.0 MiB)" for values too long to carry
// whole, of which the record holds only excerpts, or "" (the sizes alone
// after a line diff, which shows no excerpt).
func sizes(fc record.FieldChange) string {
	switch {
	case !fc.Truncated:
		return ""
	case fc.Lines != nil:
		return " (" + fc.Sizes() + ")"
	}
	return " (cut from " + fc.Sizes() + ")"
}

// printable escapes control characters (but tabs) in a line of a value,
// which a terminal would otherwise obey.
func printable(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isControl(r rune) bool { return r != '\t' && unicode.IsControl(r) }

// writeUnified indents a unified diff under its header, colouring added
// and removed lines.
func writeUnified(w *bufio.Writer, text string, p palette) error {
	for _, line := range strings.SplitAfter(text, "\n") {
		if line == "" {
			continue
		}
		writeDiffLine(w, "  ", strings.TrimSuffix(line, "\n"), p)
	}
	return nil
}

// writeDiffLine writes one line of a diff, coloured by its prefix.
func writeDiffLine(w *bufio.Writer, indent, line string, p palette) {
	color := ""
	switch {
	case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"):
		color = p.bold
	case strings.HasPrefix(line, "+"):
		color = p.green
	case strings.HasPrefix(line, "-"):
		color = p.red
	case strings.HasPrefix(line, "@@"), strings.HasPrefix(line, `\`):
		color = p.dim
	}
	fmt.Fprintf(w, "%s%s%s%s\n", indent, color, line, p.reset)
}

func textValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(b)
	// Control characters are already escaped by JSON; cap the length.
	if r := []rune(s); len(r) > maxTextValue {
		s = string(r[:maxTextValue]) + "…"
	}
	return strings.TrimSpace(s)
}

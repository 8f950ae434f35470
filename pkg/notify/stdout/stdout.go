// Package stdout writes change records to a stream, as JSON lines for
// machines or as short coloured text for people.
package stdout

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/kubediff/kubediff/pkg/record"
)

// Sink writes each record to a writer in one Write call, so that records
// from several sinks sharing a stream (one per cluster) never interleave.
// It is not safe for concurrent use; a notify.Queue gives it one writer
// goroutine.
type Sink struct {
	out    io.Writer
	buf    bytes.Buffer  // the record being written
	w      *bufio.Writer // writes to buf
	encode func(w *bufio.Writer, c record.Change) error
}

func newSink(out io.Writer, encode func(w *bufio.Writer, c record.Change) error) *Sink {
	s := &Sink{out: out, encode: encode}
	s.w = bufio.NewWriter(&s.buf)
	return s
}

// flush writes what was encoded since the last flush, in one Write.
func (s *Sink) flush() error {
	if err := s.w.Flush(); err != nil {
		return err
	}
	defer s.buf.Reset()
	_, err := s.out.Write(s.buf.Bytes())
	return err
}

// NewJSON returns a sink writing one JSON object per line.
func NewJSON(w io.Writer) *Sink {
	var line bytes.Buffer
	enc := json.NewEncoder(&line)
	// Values are shown as they are: "<none>" rather than "\u003cnone\u003e".
	enc.SetEscapeHTML(false)
	return newSink(w, func(w *bufio.Writer, c record.Change) error {
		line.Reset()
		if err := enc.Encode(c); err != nil {
			return fmt.Errorf("encode record: %w", err)
		}
		_, err := w.Write(jsonSafe(line.Bytes()))
		return err
	})
}

// NewText returns a sink writing a header line per record, a line per
// sentence of access an RBAC change gave or took away, and a line per
// changed field, with ANSI colours when color is true.
func NewText(w io.Writer, color bool) *Sink {
	p := palette{}
	if color {
		p = ansiPalette
	}
	return newSink(w, func(w *bufio.Writer, c record.Change) error {
		return encodeText(w, c, p, "")
	})
}

// Notify implements notify.Notifier. Each record is flushed at once so a
// reader (a terminal, a log shipper) sees it without delay.
func (s *Sink) Notify(_ context.Context, c record.Change) error {
	if err := s.encode(s.w, c); err != nil {
		return err
	}
	return s.flush()
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

// encodeText writes a record for people, note (if any) at the end of its
// header line. Every string from the cluster goes through printable (see
// escape.go): the terminal obeys only kubediff's own colours.
func encodeText(w *bufio.Writer, c record.Change, p palette, note string) error {
	if c.Type == record.EventRecord && c.Event != nil {
		fmt.Fprintf(w, "%s%s%s %s\n", p.dim, c.Time, p.reset, eventLine(c, p))
		return nil
	}
	typeColor := map[string]string{"added": p.green, "updated": p.yellow, "deleted": p.red}[c.Type]
	by := ""
	switch who := c.By(); {
	case who != "":
		by = " " + p.dim + "by " + printable(who) + p.reset
	case c.Type == record.Updated:
		// Every update was made by someone: "?" says kubediff does not
		// know who (no managedFields entry records the field, no source
		// named the user), rather than nothing, which reads as no one.
		by = " " + p.dim + "by ?" + p.reset
	}
	for _, note := range c.Circumstances() {
		by += " " + p.dim + note + p.reset
	}
	if g := c.GitOps; g != nil {
		color := p.dim
		if g.Via == record.ViaOutside {
			color = p.yellow
		}
		by += " " + color + "— " + printable(g.String()) + p.reset
	}
	if j := c.Judgement(); j != "" {
		by += " " + severityColor(c.Severity, p) + "[" + printable(j) + "]" + p.reset
	}
	if note != "" {
		by += " " + p.dim + note + p.reset
	}
	fmt.Fprintf(w, "%s%s%s %s%-7s%s %s%s %s%s%s\n",
		p.dim, c.Time, p.reset, typeColor, printable(c.Type), p.reset, p.bold, printable(c.Kind), printable(c.ObjectName()), p.reset, by)
	if c.Summary != "" {
		fmt.Fprintf(w, "  %s» %s%s\n", severityColor(c.Severity, p), printable(c.Summary), p.reset)
	}
	// What access an RBAC change gave or took away comes next: it is
	// what a reviewer reads the record for.
	for _, sentence := range c.Access {
		fmt.Fprintf(w, "  %s» %s%s\n", p.bold, printable(sentence), p.reset)
	}
	// What drifted from the declared state, beside the change itself:
	// the declared value is what the change alone does not show.
	if g := c.GitOps; g != nil {
		for _, f := range g.Drift {
			fmt.Fprintf(w, "  %s≠ %s%s\n", p.yellow, printable(f.Text(textValue)), p.reset)
		}
	}
	if c.Unified != "" {
		return writeUnified(w, c.Unified, p)
	}
	for _, fc := range record.CondenseConditions(c.Changes) {
		field := printable(fc.Field)
		switch {
		case fc.Op == record.OpAdd:
			fmt.Fprintf(w, "  %s+ %s: %s%s%s\n", p.green, field, textValue(fc.To), sizes(fc), p.reset)
		case fc.Op == record.OpRemove:
			fmt.Fprintf(w, "  %s- %s: %s%s%s\n", p.red, field, textValue(fc.From), sizes(fc), p.reset)
		case fc.Lines != nil:
			writeLines(w, field, fc, p)
		default:
			fmt.Fprintf(w, "  %s~ %s: %s → %s%s%s\n", p.yellow, field, textValue(fc.From), textValue(fc.To), sizes(fc), p.reset)
		}
	}
	return nil
}

// eventLine shows what an Event said about its object, a warning in
// red: "warning ReplicaSet shop/web-5d4f FailedCreate: Error creating: …
// (×3) by replicaset-controller".
func eventLine(c record.Change, p palette) string {
	e := c.Event
	color := p.dim
	if e.Warning() {
		color = p.red
	}
	text := e.Reason
	if e.Message != "" {
		text += ": " + e.Message
	}
	if e.Count > 1 {
		text += fmt.Sprintf(" (×%d)", e.Count)
	}
	by := ""
	if e.ReportingController != "" {
		by = " " + p.dim + "by " + printable(e.ReportingController) + p.reset
	}
	return fmt.Sprintf("%s%-7s%s %s%s %s%s %s%s", color, printable(strings.ToLower(e.Type)), p.reset, p.bold, printable(c.Kind), printable(c.ObjectName()), p.reset,
		printable(text), by)
}

// severityColor is the colour of what the rules said: red for critical,
// yellow for warning, dim for info.
func severityColor(severity string, p palette) string {
	switch severity {
	case record.SeverityCritical:
		return p.bold + p.red
	case record.SeverityWarning:
		return p.yellow
	}
	return p.dim
}

// writeLines shows a replaced multi-line string as its line counts and
// then its hunks, indented under the field, as a unified diff reads:
// the strings themselves, cut to one line, would hide the change.
func writeLines(w *bufio.Writer, field string, fc record.FieldChange, p palette) {
	fmt.Fprintf(w, "  %s~ %s: %d lines → %d lines%s%s\n", p.yellow, field, fc.Lines.FromLines, fc.Lines.ToLines, sizes(fc), p.reset)
	for _, h := range fc.Lines.Hunks {
		writeDiffLine(w, "    ", h.Header(), p)
		for _, line := range h.Lines {
			writeDiffLine(w, "    ", line, p)
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

// writeDiffLine writes one line of a diff, coloured by its prefix, with
// what a terminal would obey escaped.
func writeDiffLine(w *bufio.Writer, indent, line string, p palette) {
	line = printableLine(line)
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

// textValue shows a value as JSON, cut to maxTextValue characters. JSON
// escapes C0 controls but not DEL, C1 or bidirectional ones: printable
// escapes those.
func textValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return printable(fmt.Sprint(v))
	}
	s := string(b)
	if r := []rune(s); len(r) > maxTextValue {
		s = string(r[:maxTextValue]) + "…"
	}
	return printable(strings.TrimSpace(s))
}

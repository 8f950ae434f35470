// Package stdout writes change records to a stream, as JSON lines for
// machines or as short coloured text for people.
package stdout

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

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
// output always carries the whole value.
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
	fmt.Fprintf(w, "%s%s%s %s%-7s%s %s%s %s%s%s\n",
		p.dim, c.Time, p.reset, typeColor, c.Type, p.reset, p.bold, c.Kind, name, p.reset, by)
	if c.Unified != "" {
		return writeUnified(w, c.Unified, p)
	}
	for _, fc := range record.CondenseConditions(c.Changes) {
		switch fc.Op {
		case record.OpAdd:
			fmt.Fprintf(w, "  %s+ %s: %s%s\n", p.green, fc.Field, textValue(fc.To), p.reset)
		case record.OpRemove:
			fmt.Fprintf(w, "  %s- %s: %s%s\n", p.red, fc.Field, textValue(fc.From), p.reset)
		default:
			fmt.Fprintf(w, "  %s~ %s: %s → %s%s\n", p.yellow, fc.Field, textValue(fc.From), textValue(fc.To), p.reset)
		}
	}
	return nil
}

// writeUnified indents a unified diff under its header, colouring added
// and removed lines.
func writeUnified(w *bufio.Writer, text string, p palette) error {
	for _, line := range strings.SplitAfter(text, "\n") {
		if line == "" {
			continue
		}
		color := ""
		switch {
		case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"):
			color = p.bold
		case strings.HasPrefix(line, "+"):
			color = p.green
		case strings.HasPrefix(line, "-"):
			color = p.red
		case strings.HasPrefix(line, "@@"):
			color = p.dim
		}
		fmt.Fprintf(w, "  %s%s%s\n", color, strings.TrimSuffix(line, "\n"), p.reset)
	}
	return nil
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

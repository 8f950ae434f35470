package blame

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kubediff/kubediff/pkg/record"
)

// WriteText prints the lines as `git blame` does: for each, the record's
// short id, when it was kept and who made it, then the line. The gutter
// stays narrow (at most 72 columns) so that most YAML lines fit 100: the
// JSON output carries the full ids.
func (b Blame) WriteText(w io.Writer) error {
	cols := make([][3]string, len(b.Lines))
	var width [3]int
	for i, l := range b.Lines {
		cols[i] = b.columns(l)
		for c := range width {
			width[c] = max(width[c], len([]rune(cols[i][c])))
		}
	}
	// A bufio.Writer keeps its first error and returns it from Flush.
	out := bufio.NewWriter(w)
	for i, l := range b.Lines {
		for c, text := range cols[i] {
			_, _ = out.WriteString(text + strings.Repeat(" ", width[c]-len([]rune(text))+1))
		}
		_, _ = out.WriteString("│ " + l.Text + "\n")
	}
	return out.Flush()
}

// columns are the id, time and who of a line.
func (b Blame) columns(l Line) [3]string {
	at := record.Timestamp(l.Time).String()
	switch l.Origin {
	case Record:
		by := l.By
		if by == "" {
			by = "-"
		}
		return [3]string{ShortID(l.Record), at, cut(by, maxBy)}
	case Quiet:
		return [3]string{"(no record)", at, "quiet change"}
	case Unwalked:
		return [3]string{"…", "older", fmt.Sprintf("unchanged in the %d newest changes read", b.Walked)}
	}
	since := "older than the history"
	if !b.Begin.IsZero() {
		since += " (begins " + b.Begin.UTC().Format(time.RFC3339) + ")"
	}
	return [3]string{"^", "-", since}
}

// maxBy bounds the who column; the JSON output has it whole.
const maxBy = 28

// ShortID is a record id (uid/resourceVersion/type) as blame prints it,
// as git blame prints a commit: the uid's first 8 characters and the
// resourceVersion, which tell one object's records apart.
func ShortID(id string) string {
	uid, rest, ok := strings.Cut(id, "/")
	if !ok {
		return id
	}
	rv, _, _ := strings.Cut(rest, "/")
	return uid[:min(8, len(uid))] + "/" + rv
}

// cut shortens s to n runes, the last an ellipsis.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

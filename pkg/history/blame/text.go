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
// id, when it was kept and who made it, then the line.
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
		return [3]string{l.Record, at, by}
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

package cli

import (
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubediff/kubediff/internal/app"
)

// Colours of a unified diff, as git diff shows one: removed lines red,
// added green, hunk headers cyan, file headers bold.
const (
	diffRed   = "\x1b[31m"
	diffGreen = "\x1b[32m"
	diffCyan  = "\x1b[36m"
	diffBold  = "\x1b[1m"
	diffReset = "\x1b[0m"
)

// writeDiff writes a unified diff to out, coloured when --color (auto: a
// terminal without NO_COLOR) says so, as watch colours its records.
func writeDiff(cmd *cobra.Command, out io.Writer, text string) error {
	color, _ := cmd.Flags().GetString("color")
	if !app.UseColor(color, out) {
		_, err := io.WriteString(out, text)
		return err
	}
	_, err := io.WriteString(out, colorDiff(text))
	return err
}

// colorDiff colours each line of a unified diff by its first characters.
func colorDiff(text string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		body := strings.TrimSuffix(line, "\n")
		start := ""
		switch {
		case body == "":
		case strings.HasPrefix(body, "+++"), strings.HasPrefix(body, "---"):
			start = diffBold
		case strings.HasPrefix(body, "@@"):
			start = diffCyan
		case strings.HasPrefix(body, "+"):
			start = diffGreen
		case strings.HasPrefix(body, "-"):
			start = diffRed
		}
		if start == "" {
			b.WriteString(line)
			continue
		}
		b.WriteString(start + body + diffReset + line[len(body):])
	}
	return b.String()
}

// addColorFlag adds --color to a command that prints a diff.
func addColorFlag(cmd *cobra.Command) {
	cmd.Flags().String("color", "auto", "colour the diff: auto (a terminal without NO_COLOR), always, never")
	markUnbound(cmd, "color")
}

package cli

import (
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// People read a terminal, programs a pipe: with no -o, output (the
// config's key, its KUBEDIFF_OUTPUT variable) or config file choosing,
// records on a terminal are text and elsewhere JSON, as ls, gh and
// kubectl's printers decide.

// toTerminal reports whether out is a terminal.
func toTerminal(out io.Writer) bool {
	f, ok := out.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// outputChosen reports whether -o or KUBEDIFF_OUTPUT chose the format.
func outputChosen(cmd *cobra.Command) bool {
	if fl := cmd.Flags().Lookup("output"); fl != nil && fl.Changed {
		return true
	}
	return os.Getenv(envPrefix+"_OUTPUT") != ""
}

// recordFormat is the history commands' format: -o's, else text on a
// terminal and JSON elsewhere.
func recordFormat(cmd *cobra.Command) string {
	format, _ := cmd.Flags().GetString("output")
	if !outputChosen(cmd) && toTerminal(cmd.OutOrStdout()) {
		return "text"
	}
	return format
}

// Package cli is kubediff's command line: the only package that knows about
// cobra and viper. It turns flags, environment and config file into a
// config.Config and wires discovery, watcher, diff and notify together.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2 // bad flags, config file or values
)

// usageError marks a user's mistake (flag, config key, value): exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// Run executes kubediff with args (without the program name) and returns
// the process exit code. Records go to stdout, operational logs to stderr.
// Cancelling ctx (SIGINT/SIGTERM in main) stops a running watch cleanly.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return RunAs(ctx, "kubediff", args, stdout, stderr)
}

// RunAs is Run under another name in help and errors: "kubectl kubediff"
// when kubectl runs the binary as its plugin (see DisplayName).
func RunAs(ctx context.Context, name string, args []string, stdout, stderr io.Writer) int {
	root := newRootCommand(name, stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitError
}

// DisplayName is how the user called kubediff, from the program's path:
// kubectl finds plugins by their file name, kubectl-kubediff, and the user
// types `kubectl kubediff`.
func DisplayName(program string) string {
	base := strings.TrimSuffix(filepath.Base(program), ".exe")
	if base == "kubectl-kubediff" {
		return "kubectl kubediff"
	}
	return "kubediff"
}

func newRootCommand(name string, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:         "kubediff",
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: name},
		Short:       "Watch every resource in a Kubernetes cluster and report what changed",
		Long: `kubediff watches every resource type the API server offers, custom
resources included, and reports each change as a readable diff: JSON lines
or text on stdout. Operational logs go to stderr.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	addGlobalFlags(root)
	root.AddCommand(
		newWatchCommand(stdout, stderr),
		newResourcesCommand(stdout, stderr),
		newRulesCommand(stdout),
		newVersionCommand(stdout),
	)
	for _, cmd := range root.Commands() {
		cmd.Example = strings.ReplaceAll(cmd.Example, "  kubediff ", "  "+name+" ")
	}
	return root
}

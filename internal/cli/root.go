// Package cli is kubediff's command line: the only package that knows about
// cobra and viper. It turns flags, environment and config file into a
// config.Config, checks it, and hands it to the program (internal/app).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubediff/kubediff/internal/app"
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

// isUsageError says whether err is the user's to fix: marked here, or by
// the program (app.ConfigError).
func isUsageError(err error) bool {
	var ue usageError
	var ce app.ConfigError
	return errors.As(err, &ue) || errors.As(err, &ce)
}

// runtimeError marks a failure while a command runs (the cluster not
// answering, a sink that cannot be built, a state dir that cannot be
// used): exit code 1, so that a script or a supervisor can tell "fix the
// command line" from "try again later".
type runtimeError struct{ err error }

func (e runtimeError) Error() string { return e.err.Error() }
func (e runtimeError) Unwrap() error { return e.err }

// exitCode sorts an error: what a command's run marks as the user's
// mistake, and everything cobra reports before a command runs (an
// unknown command, flag or argument), is a usage error; the rest of what
// a run returns is a runtime failure.
func exitCode(err error) int {
	var re runtimeError
	switch {
	case err == nil:
		return exitOK
	case isUsageError(err):
		return exitUsage
	case errors.As(err, &re):
		return exitError
	}
	return exitUsage
}

// markRuntimeErrors makes every error a command's run returns a
// runtimeError unless it is a usageError: cobra's own errors, which come
// before any run, then stay usage errors.
func markRuntimeErrors(cmd *cobra.Command) {
	if run := cmd.RunE; run != nil {
		cmd.RunE = func(c *cobra.Command, args []string) error {
			err := run(c, args)
			if err == nil || isUsageError(err) {
				return err
			}
			return runtimeError{err}
		}
	}
	for _, sub := range cmd.Commands() {
		markRuntimeErrors(sub)
	}
}

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
	fmt.Fprintf(stderr, "%s: %s\n", name, shortenError(err.Error()))
	return exitCode(err)
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
		newHistoryCommand(stdout, stderr),
		newGetCommand(stdout, stderr),
		newDiffCommand(stdout, stderr),
		newBlameCommand(stdout, stderr),
		newDriftCommand(stdout, stderr),
		newRestoreCommand(stdout, stderr),
		newMCPCommand(stdout, stderr),
		newUICommand(stdout, stderr),
		newRulesCommand(stdout),
		newVersionCommand(stdout),
	)
	for _, cmd := range root.Commands() {
		cmd.Example = strings.ReplaceAll(cmd.Example, "  kubediff ", "  "+name+" ")
	}
	registerCompletions(root)
	markRuntimeErrors(root)
	return root
}

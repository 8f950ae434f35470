package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/kubediff/kubediff/internal/app"
	"github.com/kubediff/kubediff/pkg/notify/otlp"
)

// Stamped at build time: -ldflags "-X github.com/kubediff/kubediff/internal/cli.version=v1.2.3
// -X github.com/kubediff/kubediff/internal/cli.commit=abc123" (see Makefile).
var (
	version = "dev"
	commit  = ""
)

// The OTLP sink reports kubediff's version as service.version.
func init() {
	otlp.Version = version
	app.Version = version
}

func newVersionCommand(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print kubediff's version and commit",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(stdout, "kubediff %s (commit %s, %s)\n", version, buildCommit(), runtime.Version())
			return err
		},
	}
}

// buildCommit is the stamped commit, else the one Go recorded when built
// from a checkout.
func buildCommit() string {
	if commit != "" {
		return commit
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
}

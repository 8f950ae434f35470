package cli

import (
	"context"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/kubediff/kubediff/internal/app"
	"github.com/kubediff/kubediff/pkg/history/historyapi"
	"github.com/kubediff/kubediff/pkg/history/historymcp"
	"github.com/kubediff/kubediff/pkg/watcher"
)

func newMCPCommand(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Answer AI assistants from kubediff's history (MCP over stdio)",
		Long: `Serve kubediff's history to an AI assistant over the Model Context Protocol,
on stdin and stdout: the changes of a time window, one object's changes, an
object at a moment, the difference between two moments, and the types
kubediff knows. It reads a state dir (while its kubediff runs or after; by
default the one 'kubediff watch' keeps) or asks
a running kubediff (--server) as your kubeconfig's user, who sees only what
their Kubernetes RBAC lets them list.`,
		Example: `  kubediff mcp
  kubediff mcp --server http://127.0.0.1:8080`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			src, done, err := openHistory(cmd, stderr)
			if err != nil {
				return err
			}
			defer done()
			opts := historymcp.Options{Source: src, Version: version}
			if remote, ok := src.(*historyapi.Remote); ok {
				opts.Health = remoteHealth(remote)
			}
			if fleet, ok := src.(storeSource); ok {
				opts.Cluster = fleet.Cluster
			}
			server := historymcp.NewServer(opts)
			return server.Run(cmd.Context(), &historymcp.LineTransport{In: os.Stdin, Out: stdout})
		},
	}
	addHistorySourceFlags(cmd)
	return cmd
}

// remoteHealth asks a running kubediff how its watches are doing.
func remoteHealth(remote *historyapi.Remote) func(context.Context) ([]watcher.TargetState, error) {
	return func(ctx context.Context) ([]watcher.TargetState, error) {
		var out struct{ Types []app.TypeRow }
		if err := remote.GetJSON(ctx, app.TypesPath, &out); err != nil {
			return nil, err
		}
		var states []watcher.TargetState
		for _, row := range out.Types {
			states = append(states, row.Watches...)
		}
		return states, nil
	}
}

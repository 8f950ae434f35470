package cli

import (
	"io"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/kubediff/kubediff/pkg/historymcp"
)

func newMCPCommand(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Answer AI assistants from kubediff's history (MCP over stdio)",
		Long: `Serve kubediff's history to an AI assistant over the Model Context Protocol,
on stdin and stdout: the changes of a time window, one object's changes, an
object at a moment, the difference between two moments, and the types
kubediff knows. It reads a state dir (no kubediff running with it) or asks
a running kubediff (--server) as your kubeconfig's user, who sees only what
their Kubernetes RBAC lets them list.`,
		Example: `  kubediff mcp --state-dir /var/lib/kubediff
  kubediff mcp --server http://127.0.0.1:8080`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			src, done, err := openHistory(cmd, stderr)
			if err != nil {
				return err
			}
			defer done()
			server := historymcp.NewServer(historymcp.Options{Source: src, Version: version})
			return server.Run(cmd.Context(), stdioTransport(stdout))
		},
	}
	addHistorySourceFlags(cmd)
	return cmd
}

// stdioTransport speaks on the process's stdin and stdout (the writer
// Run was given, which is os.Stdout but in tests).
func stdioTransport(stdout io.Writer) mcp.Transport {
	if w, ok := stdout.(io.WriteCloser); ok && w == os.Stdout {
		return &mcp.StdioTransport{}
	}
	return &mcp.IOTransport{Reader: os.Stdin, Writer: nopCloser{stdout}}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

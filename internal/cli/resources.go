package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubediff/kubediff/internal/app"
	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/history/historyapi"
)

func newResourcesCommand(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "resources",
		Short: "List every resource type and whether watch would watch it",
		Long: `List every resource type the API server offers and whether 'kubediff watch'
with the same flags and config would watch it: watched, excluded by config,
forbidden (with the verb and scope the credentials lack), or not watchable
(no list and watch verbs); API groups that cannot be discovered now are
listed as unavailable. Custom resources are included.

With --server, ask a running kubediff instead: each type as it decided, and
how its watches are doing (synced, syncing, or retrying with the last
error), the objects it holds and the last change it saw.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			rows, err := resourceRows(cmd, cfg, stderr)
			if err != nil {
				return err
			}
			if format, _ := cmd.Flags().GetString("format"); format == "json" {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			server, _ := cmd.Flags().GetString("server")
			return writeRows(stdout, rows, server != "")
		},
	}
	addSelectionFlags(cmd)
	addCompletion(cmd, false)
	// Not "output": that key is watch's record format.
	cmd.Flags().StringP("format", "o", "table", "table or json")
	cmd.Flags().String("server", "", "ask a running kubediff at its --http-address (http://HOST:PORT) how each type's watches are doing, as your kubeconfig's user")
	markUnbound(cmd, "server")
	return cmd
}

// resourceRows plans as watch would, or asks a running kubediff.
func resourceRows(cmd *cobra.Command, cfg config.Config, stderr io.Writer) ([]app.TypeRow, error) {
	log := app.NewLogger(stderr, cfg.Log)
	rc, err := app.RestConfig(cfg, log)
	if err != nil {
		return nil, err
	}
	if server, _ := cmd.Flags().GetString("server"); server != "" {
		remote, err := historyapi.NewRemote(server, rc)
		if err != nil {
			return nil, usageError{err}
		}
		var out struct{ Types []app.TypeRow }
		ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
		defer cancel()
		return out.Types, remote.GetJSON(ctx, app.TypesPath, &out)
	}
	c, err := app.NewClients(rc)
	if err != nil {
		return nil, err
	}
	plan, err := app.NewPlanner(cfg, c).Plan(cmd.Context())
	if plan.All == nil && err != nil {
		return nil, app.PlanError(err)
	}
	if err != nil {
		log.Warn("some API groups could not be discovered", "err", err)
	}
	return app.Rows(plan, nil), nil
}

// writeRows prints the table; live adds the running kubediff's columns.
func writeRows(w io.Writer, rows []app.TypeRow, live bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := "GROUP\tVERSION\tRESOURCE\tKIND\tNAMESPACED\tSTATUS\tREASON"
	if live {
		header = "GROUP\tVERSION\tRESOURCE\tKIND\tNAMESPACED\tSTATUS\tSTATE\tOBJECTS\tLAST CHANGE\tREASON"
	}
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		if !live {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%t\t%s\t%s\n", r.Group, r.Version, r.Resource, r.Kind, r.Namespaced, r.Status, r.Reason)
			continue
		}
		last := ""
		if !r.LastEvent.IsZero() {
			last = time.Since(r.LastEvent).Round(time.Second).String() + " ago"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%t\t%s\t%s\t%d\t%s\t%s\n", r.Group, r.Version, r.Resource, r.Kind, r.Namespaced, r.Status, r.State, r.Objects, last, r.Reason)
	}
	return tw.Flush()
}

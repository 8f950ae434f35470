package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kubediff/kubediff/internal/app"
	"github.com/kubediff/kubediff/pkg/discovery"
)

func newResourcesCommand(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "resources",
		Short: "List every resource type and whether watch would watch it",
		Long: `List every resource type the API server offers and whether 'kubediff watch'
with the same flags and config would watch it: watched, excluded by config,
forbidden (with the verb and scope the credentials lack), or not watchable
(no list and watch verbs). Custom resources are included.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			log := app.NewLogger(stderr, cfg.Log)
			rc, err := app.RestConfig(cfg, log)
			if err != nil {
				return err
			}
			c, err := app.NewClients(rc)
			if err != nil {
				return err
			}
			plan, err := app.NewPlanner(cfg, c).Plan(cmd.Context())
			if plan.All == nil && err != nil {
				return app.PlanError(err)
			}
			if err != nil {
				log.Warn("some API groups could not be discovered", "err", err)
			}
			statuses := plan.Statuses
			if format, _ := cmd.Flags().GetString("format"); format == "json" {
				return writeStatusJSON(stdout, statuses)
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "GROUP\tVERSION\tRESOURCE\tKIND\tNAMESPACED\tSTATUS\tREASON")
			for _, s := range statuses {
				r := s.Resource
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%t\t%s\t%s\n", r.GVR.Group, r.GVR.Version, r.GVR.Resource, r.Kind, r.Namespaced, s.State, s.Reason)
			}
			return tw.Flush()
		},
	}
	addSelectionFlags(cmd)
	addCompletion(cmd, false)
	// Not "output": that key is watch's record format.
	cmd.Flags().StringP("format", "o", "table", "table or json")
	return cmd
}

type statusJSON struct {
	Group      string `json:"group"`
	Version    string `json:"version"`
	Resource   string `json:"resource"`
	Kind       string `json:"kind"`
	Namespaced bool   `json:"namespaced"`
	Status     string `json:"status"`
	Reason     string `json:"reason,omitempty"`
}

func writeStatusJSON(w io.Writer, statuses []discovery.Status) error {
	out := make([]statusJSON, 0, len(statuses))
	for _, s := range statuses {
		r := s.Resource
		out = append(out, statusJSON{r.GVR.Group, r.GVR.Version, r.GVR.Resource, r.Kind, r.Namespaced, s.State, s.Reason})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"
	k8sdiscovery "k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/discovery"
)

func newResourcesCommand(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "resources",
		Short: "List the resource types that watch would watch",
		Long: `List the resource types that 'kubediff watch' would watch with the same
flags: every type with list and watch verbs, custom resources included, one
version per type, filtered by --resources and --exclude-resources.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			log := newLogger(stderr, cfg.Log)
			rc, err := restConfig(cfg, log)
			if err != nil {
				return err
			}
			_, resources, err := selectResources(cmd.Context(), rc, cfg, log)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "GROUP\tVERSION\tRESOURCE\tKIND\tNAMESPACED")
			for _, r := range resources {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%t\n", r.GVR.Group, r.GVR.Version, r.GVR.Resource, r.Kind, r.Namespaced)
			}
			return tw.Flush()
		},
	}
	addSelectionFlags(cmd)
	return cmd
}

// selectResources discovers the watchable types (all) and applies the
// config's selection (selected). Groups that fail discovery are logged as
// warnings and left out.
func selectResources(ctx context.Context, rc *rest.Config, cfg config.Config, log *slog.Logger) (all, selected []discovery.Resource, err error) {
	dc, err := k8sdiscovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return nil, nil, fmt.Errorf("discovery client: %w", err)
	}
	all, err = discovery.New(dc).Resources(ctx)
	if all == nil && err != nil {
		return nil, nil, err
	}
	if err != nil {
		log.Warn("some API groups could not be discovered", "err", err)
	}
	selected, err = discovery.Select(all, cfg.Resources, cfg.ExcludeResources)
	if err != nil {
		return nil, nil, usageError{err}
	}
	if cfg.Diff.Defaults.Events {
		// Events are a stream of their own, not changes to the cluster:
		// watched only when asked for by name.
		selected = slices.DeleteFunc(selected, func(r discovery.Resource) bool {
			return r.Kind == "Event" && !slices.ContainsFunc(cfg.Resources, r.Matches)
		})
	}
	return all, selected, nil
}

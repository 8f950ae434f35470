package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kubediff/kubediff/pkg/diff"
)

func newRulesCommand(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "List the built-in rules that hide what is not news, and whether each is on",
		Long: `List every built-in rule that hides changes (diff.defaults in the config
file), the types it applies to, what it hides and what still shows, and
whether it is on with the current config. Turn a rule off with
diff.defaults.<rule>: false, or for some types only with diff.defaultsOff.
Your own rules (diff.ignorePaths, diff.ignore) come on top.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			on := cfg.Diff.Defaults.Enabled()
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RULE\tON\tTYPES\tHIDES")
			for _, r := range diff.DefaultRules {
				state := "no"
				if slices.Contains(on, r.Name) {
					state = "yes"
					var offFor []string
					for _, off := range cfg.Diff.DefaultsOff {
						if slices.Contains(off.Rules, r.Name) {
							offFor = append(offFor, off.Resources...)
						}
					}
					if len(offFor) > 0 {
						state = "yes, not for " + strings.Join(offFor, ",")
					}
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, state, r.Types, r.Hides)
			}
			return tw.Flush()
		},
	}
	return cmd
}

package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// helpWidth is the width watch --help fits: a terminal's default.
const helpWidth = 80

// watchFlagGroups order watch's many flags by what a person comes for,
// first what everyone uses. A flag in no group is shown under "Other
// flags", so that a new one is never hidden.
var watchFlagGroups = []struct {
	title string
	flags []string
}{
	{"What to watch and how to print it", []string{"output", "color", "namespace", "all-namespaces", "exclude-namespace",
		"resources", "exclude-resources", "selector", "field-selector", "events", "fold", "diff-style", "patch", "ignore-path", "show-helm-storage"}},
	{"Which cluster", []string{"kubeconfig", "context", "all-contexts", "cluster-name", "config"}},
	{"History (docs/history.md)", []string{"state-dir", "history-retention", "history-max-bytes", "history-events-retention", "history-store", "history-store-password-file"}},
	{"Who made each change (docs/identity.md)", []string{"identity-wait", "audit-webhook-address", "audit-webhook-cert-file",
		"audit-webhook-key-file", "audit-webhook-client-ca-file", "audit-webhook-token-file", "audit-log",
		"admission-observer-address", "admission-observer-cert-file", "admission-observer-key-file",
		"admission-observer-token-file", "admission-observer-client-ca-file", "helm-storage"}},
	{"In a cluster (docs/running-in-a-cluster.md)", []string{"http-address", "api-service-address", "leader-elect",
		"leader-election-id", "leader-election-namespace", "leader-election-lease-duration",
		"leader-election-renew-deadline", "leader-election-retry-period", "drain-timeout"}},
	{"Tuning", []string{"compress-cache", "queue-size", "queue-max-bytes", "read-batching", "rediscovery-interval"}},
	{"Logs", []string{"log-level", "log-format", "help"}},
}

// watchUsage prints watch's usage with its flags in groups, each line
// within helpWidth columns.
func watchUsage(cmd *cobra.Command) error {
	out := cmd.OutOrStderr()
	fmt.Fprintf(out, "Usage:\n  %s\n", cmd.UseLine())
	if cmd.Example != "" {
		fmt.Fprintf(out, "\nExamples:\n%s\n", cmd.Example)
	}
	all := pflag.NewFlagSet("all", pflag.ContinueOnError)
	all.AddFlagSet(cmd.LocalFlags())
	all.AddFlagSet(cmd.InheritedFlags())
	shown := map[string]bool{}
	for _, g := range watchFlagGroups {
		set := pflag.NewFlagSet(g.title, pflag.ContinueOnError)
		for _, name := range g.flags {
			if f := all.Lookup(name); f != nil && !f.Hidden {
				set.AddFlag(f)
				shown[name] = true
			}
		}
		printFlagGroup(out, g.title, set)
	}
	rest := pflag.NewFlagSet("other", pflag.ContinueOnError)
	all.VisitAll(func(f *pflag.Flag) {
		if !shown[f.Name] && !f.Hidden {
			rest.AddFlag(f)
		}
	})
	printFlagGroup(out, "Other flags", rest)
	return nil
}

// printFlagGroup prints one group's flags, wrapped to helpWidth.
func printFlagGroup(out io.Writer, title string, set *pflag.FlagSet) {
	if !set.HasFlags() {
		return
	}
	set.SortFlags = false
	fmt.Fprintf(out, "\n%s:\n%s", title, wrapFlagUsages(set.FlagUsagesWrapped(helpWidth)))
}

// wrapFlagUsages breaks what pflag leaves over helpWidth (a long flag
// name and its type, with no room beside it) onto lines of its own.
func wrapFlagUsages(usages string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(usages, "\n") {
		body := strings.TrimSuffix(line, "\n")
		for len([]rune(body)) > helpWidth {
			cut := strings.LastIndex(string([]rune(body)[:helpWidth]), " ")
			if cut <= strings.IndexFunc(body, func(r rune) bool { return r != ' ' }) {
				break
			}
			b.WriteString(body[:cut] + "\n")
			body = strings.Repeat(" ", 8) + strings.TrimLeft(body[cut:], " ")
		}
		b.WriteString(body + line[len(strings.TrimSuffix(line, "\n")):])
	}
	return b.String()
}

package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubediff/kubediff/internal/app"
	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/record"
)

// Completion is given by what a flag or an argument names, not by
// command: registerCompletions walks every command, so that a command
// added later completes its --namespace, --context, -o or TIME flags and
// its TYPE arguments with nothing more than the usual names. A flag whose
// words are its own says them with completeWords.

// wordsAnnotation holds the words a flag takes (completeWords).
const wordsAnnotation = "kubediff/words"

// completeWords says which words a flag takes, for completion.
func completeWords(cmd *cobra.Command, flag string, words ...string) {
	_ = cmd.Flags().SetAnnotation(flag, wordsAnnotation, words)
}

// flagWords are the words of the flags that take one of a few, by name.
var flagWords = map[string][]string{
	"color":      config.Colors,
	"log-level":  config.LogLevels,
	"log-format": config.LogFormats,
	"diff-style": config.DiffStyles,
	"severity":   record.Severities,
}

// timeFlags take a TIME (RFC 3339, a length of time ago, now);
// sinceFlags a length of time. Completion offers the common ones.
var (
	timeFlags  = []string{"at", "from", "to", "until"}
	sinceFlags = []string{"since"}
	durations  = []string{"5m", "15m", "1h", "6h", "24h"}
)

// outputFormats are the formats an -o flag may name; its usage says which.
var outputFormats = []string{"json", "text", "yaml", "table", "none"}

// registerCompletions gives every command's flags and TYPE arguments the
// completion their names call for.
func registerCompletions(root *cobra.Command) {
	visit := func(cmd *cobra.Command) {
		if strings.Contains(cmd.Use, "TYPE") && cmd.ValidArgsFunction == nil {
			cmd.ValidArgsFunction = completeArgs
		}
		register := func(f *pflag.Flag) {
			if complete := flagCompletion(f); complete != nil {
				_ = cmd.RegisterFlagCompletionFunc(f.Name, complete) // one registered already stays
			}
		}
		cmd.LocalNonPersistentFlags().VisitAll(register)
		cmd.PersistentFlags().VisitAll(register)
	}
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		visit(cmd)
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// flagCompletion is the completion a flag's name or annotation calls for,
// or nil (files, for a path; nothing to offer otherwise).
func flagCompletion(f *pflag.Flag) cobra.CompletionFunc {
	switch {
	case f.Annotations[wordsAnnotation] != nil:
		return fixed(f.Annotations[wordsAnnotation])
	case f.Name == "output" && !isUnbound(f):
		return fixed(config.Outputs)
	case f.Name == "output" || f.Shorthand == "o":
		return fixed(wordsIn(f.Usage, outputFormats))
	case flagWords[f.Name] != nil:
		return fixed(flagWords[f.Name])
	case slices.Contains(timeFlags, f.Name):
		return completeMoments
	case slices.Contains(sinceFlags, f.Name):
		return fixed(durations)
	case f.Name == "namespace" || f.Name == "exclude-namespace":
		return completeNamespaces
	case f.Name == "resources" || f.Name == "exclude-resources":
		return completeTypes
	case f.Name == "context":
		return completeContexts
	case f.Name == "cluster":
		return completeClusters
	}
	return nil
}

// fixed completes one of words.
func fixed(words []string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return withPrefix(words, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// wordsIn are the words of candidates that text names, in its order.
func wordsIn(text string, candidates []string) []string {
	at := map[string]int{}
	var out []string
	for _, w := range candidates {
		if loc := regexp.MustCompile(`\b` + w + `\b`).FindStringIndex(text); loc != nil {
			at[w] = loc[0]
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return at[a] - at[b] })
	return out
}

// completeMoments offers durations ago and the present moment (RFC 3339).
func completeMoments(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	now := time.Now().UTC().Truncate(time.Second).Format(time.RFC3339)
	return withPrefix(append(slices.Clone(durations), now), toComplete), cobra.ShellCompDirectiveNoFileComp
}

// completeContexts offers the kubeconfig's contexts.
func completeContexts(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return withPrefix(kubeconfigContexts(cmd), toComplete), cobra.ShellCompDirectiveNoFileComp
}

// completeClusters offers the clusters of a kubediff watching several:
// the state dir's (--state-dir), else the kubeconfig's contexts, as such
// a kubediff names its clusters after them.
func completeClusters(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	var names []string
	if dir, _ := cmd.Flags().GetString("state-dir"); dir != "" {
		entries, _ := os.ReadDir(filepath.Dir(app.ClusterStateDir(dir, "x")))
		for _, e := range entries {
			if e.IsDir() {
				names = append(names, e.Name())
			}
		}
	}
	if len(names) == 0 {
		names = kubeconfigContexts(cmd)
	}
	return withPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// kubeconfigContexts are the contexts of the kubeconfig the flags name.
func kubeconfigContexts(cmd *cobra.Command) []string {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath, _ = cmd.Flags().GetString("kubeconfig")
	raw, err := rules.Load()
	if err != nil {
		return nil
	}
	var names []string
	for name := range raw.Contexts {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// withPrefix keeps the words that start with prefix.
func withPrefix(words []string, prefix string) []string {
	var out []string
	for _, w := range words {
		if strings.HasPrefix(w, prefix) {
			out = append(out, w)
		}
	}
	return out
}

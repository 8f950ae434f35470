package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/diff"
	"github.com/kubediff/kubediff/pkg/rules"
)

func newRulesCommand(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "List the rules: those that name the records that matter, and the built-in ones that hide what is not news",
		Long: `List the rules that name the records that matter (docs/rules.md): your
own (rules in the config file) and every rule of the built-in pack,
each with its severity, whether it is on (a pack rule is on when
rulePack names it), where it comes from and its CEL expression.

Then list every built-in rule that hides changes (diff.defaults in the
config file), the types it applies to, what it hides and what still
shows, and whether it is on with the current config. Turn a rule off
with diff.defaults.<rule>: false, or for some types only with
diff.defaultsOff. Your own rules (diff.ignorePaths, diff.ignore) come on
top.`,
		Example: `  kubediff rules --config config.example.yaml
  kubediff rules -o json | jq '.rules[] | select(.enabled) | .name'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			format, _ := cmd.Flags().GetString("output")
			if format != "text" && format != "json" {
				return usageError{fmt.Errorf("-o %q: want text or json", format)}
			}
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			list, err := listRules(cfg, configPath(cmd))
			if err != nil {
				return err
			}
			if format == "json" {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(list)
			}
			return list.writeText(stdout)
		},
	}
	cmd.Flags().StringP("output", "o", "text", "text (two tables) or json (one object: rules, quietRules)")
	markUnbound(cmd, "output")
	return cmd
}

// ruleList is what `kubediff rules` says.
type ruleList struct {
	Rules      []namingRule `json:"rules"`
	QuietRules []quietRule  `json:"quietRules"`
}

// namingRule is a rule that names records (rules, rulePack).
type namingRule struct {
	Name        string   `json:"name"`
	Severity    string   `json:"severity"`
	Enabled     bool     `json:"enabled"`
	Source      string   `json:"source"` // the config file, or "pack"
	Namespaces  []string `json:"namespaces,omitempty"`
	Drop        bool     `json:"drop,omitempty"`
	When        string   `json:"when"`
	Summary     string   `json:"summary,omitempty"`
	Description string   `json:"description,omitempty"`
}

// quietRule is a built-in rule that hides what is not news.
type quietRule struct {
	Name    string   `json:"name"`
	Enabled bool     `json:"enabled"`
	NotFor  []string `json:"notFor,omitempty"` // types it is off for (diff.defaultsOff)
	Types   string   `json:"types"`
	Hides   string   `json:"hides"`
}

// listRules lists cfg's rules (validated already), the pack's, and the
// quiet ones; path names the config file the rules came from.
func listRules(cfg config.Config, path string) (ruleList, error) {
	set, err := rules.Compile(cfg.Rules, cfg.RulePack)
	if err != nil {
		return ruleList{}, err
	}
	pack, err := rules.Pack()
	if err != nil {
		return ruleList{}, err
	}
	source := path
	if source == "" {
		source = "config"
	}
	var out ruleList
	description := map[string]string{}
	for _, p := range pack {
		description[p.Name] = p.Description
	}
	for _, r := range set.Rules() {
		where := source
		if r.Pack {
			where = "pack"
		}
		out.Rules = append(out.Rules, namingRule{Name: r.Name, Severity: r.Severity, Enabled: true, Source: where,
			Namespaces: r.Namespaces, Drop: r.Drop, When: r.When, Summary: r.Summary, Description: description[r.Name]})
	}
	for _, p := range pack {
		if !slices.Contains(set.Names(), p.Name) {
			out.Rules = append(out.Rules, namingRule{Name: p.Name, Severity: p.Severity, Source: "pack",
				When: p.When, Summary: p.Summary, Description: p.Description})
		}
	}
	out.QuietRules = quietRules(cfg)
	return out, nil
}

func quietRules(cfg config.Config) []quietRule {
	on := cfg.Diff.Defaults.Enabled()
	out := make([]quietRule, 0, len(diff.DefaultRules))
	for _, r := range diff.DefaultRules {
		q := quietRule{Name: r.Name, Enabled: slices.Contains(on, r.Name), Types: r.Types, Hides: r.Hides}
		for _, off := range cfg.Diff.DefaultsOff {
			if q.Enabled && slices.Contains(off.Rules, r.Name) {
				q.NotFor = append(q.NotFor, off.Resources...)
			}
		}
		out = append(out, q)
	}
	return out
}

// writeText writes the two tables, each rule's expression on one line
// and cut at whenWidth (-o json has it whole).
func (l ruleList) writeText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "Rules that name the records that matter (rules, rulePack; docs/rules.md):")
	fmt.Fprintln(tw, "RULE\tSEVERITY\tON\tSOURCE\tWHEN")
	for _, r := range l.Rules {
		source := r.Source
		if len(r.Namespaces) > 0 {
			source += ", in " + strings.Join(r.Namespaces, ",")
		}
		if r.Drop {
			source += ", drops"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Name, r.Severity, yesNo(r.Enabled), source, oneLineCut(r.When, whenWidth))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nBuilt-in rules that hide what is not news (diff.defaults; docs/diffs.md):")
	fmt.Fprintln(tw, "RULE\tON\tTYPES\tHIDES")
	for _, q := range l.QuietRules {
		state := yesNo(q.Enabled)
		if len(q.NotFor) > 0 {
			state = "yes, not for " + strings.Join(q.NotFor, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", q.Name, state, q.Types, q.Hides)
	}
	return tw.Flush()
}

// whenWidth is how much of a rule's expression the text table shows.
const whenWidth = 80

// oneLineCut is s with its runs of white space made one space, cut to
// width runes with "…".
func oneLineCut(s string, width int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > width {
		return string(r[:width-1]) + "…"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

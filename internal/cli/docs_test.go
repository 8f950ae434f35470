package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubediff/kubediff/pkg/config"
)

// configurationDoc is the reference page for every command's flags and
// every config key; the README only links to it.
var configurationDoc = filepath.Join("..", "..", "docs", "configuration.md")

// Every flag of every command, cobra's own help and completion commands
// included, is documented in docs/configuration.md as --name.
func TestConfigurationDocumentsEveryFlag(t *testing.T) {
	data, err := os.ReadFile(configurationDoc)
	if err != nil {
		t.Fatal(err)
	}
	root := newRootCommand("kubediff", &bytes.Buffer{}, &bytes.Buffer{})
	// Cobra adds these when it executes; they are commands a user runs.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	flags := map[string][]string{} // flag name → commands that take it
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		if cmd.Hidden {
			return
		}
		cmd.InitDefaultHelpFlag()
		visit := func(f *pflag.Flag) {
			if !f.Hidden {
				flags[f.Name] = append(flags[f.Name], cmd.CommandPath())
			}
		}
		cmd.LocalFlags().VisitAll(visit)
		cmd.InheritedFlags().VisitAll(visit)
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if len(flags) < 20 {
		t.Fatalf("found only %d flags in the command tree: %v", len(flags), flags)
	}
	names := make([]string, 0, len(flags))
	for name := range flags {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		cmds := flags[name]
		// --leader-elect must appear on its own, not only inside
		// --leader-election-id.
		re := regexp.MustCompile(`(^|[^-\w])--` + regexp.QuoteMeta(name) + `([^-\w]|$)`)
		if !re.Match(data) {
			sort.Strings(cmds)
			t.Errorf("docs/configuration.md does not document --%s (a flag of %s)", name, strings.Join(cmds, ", "))
		}
	}
}

// Every config key, found in config.Config the way the loader finds them,
// is documented in docs/configuration.md in full, as `a.b.c`.
func TestConfigurationDocumentsEveryConfigKey(t *testing.T) {
	data, err := os.ReadFile(configurationDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.ToLower(string(data)) // knownKeys lower-cases keys, as viper does
	known := map[string]bool{}
	knownKeys(reflect.TypeFor[config.Config](), "", known)
	if len(known) < 20 {
		t.Fatalf("found only %d config keys: %v", len(known), known)
	}
	keys := make([]string, 0, len(known))
	for key := range known {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		if !strings.Contains(doc, "`"+key+"`") {
			t.Errorf("docs/configuration.md does not document the config key %s (written in full, in backquotes)", key)
		}
	}
}

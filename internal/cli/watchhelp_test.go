package cli

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// watch --help fits a terminal of 80 columns, its flags in groups in the
// order a person needs them, each flag once (it was 71 lines of 44
// flags in alphabetical order, 47 of them over 80 columns).
func TestWatchHelpFitsATerminalInGroups(t *testing.T) {
	var out, errs bytes.Buffer
	if code := Run(context.Background(), []string{"watch", "--help"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	help := out.String()
	for i, line := range strings.Split(help, "\n") {
		if n := len([]rune(line)); n > helpWidth {
			t.Errorf("line %d is %d columns: %q", i+1, n, line)
		}
	}
	last := -1
	for _, g := range watchFlagGroups {
		at := strings.Index(help, "\n"+g.title+":\n")
		if at < last {
			t.Errorf("group %q missing or out of order", g.title)
		}
		last = at
	}
	if strings.Contains(help, "Other flags:") {
		t.Errorf("a flag is in no group:\n%s", help[strings.Index(help, "Other flags:"):])
	}
	root := newRootCommand("kubediff", &out, &errs)
	watch, _, _ := root.Find([]string{"watch"})
	watch.Flags().VisitAll(func(f *pflag.Flag) { once(t, help, f.Name) })
	watch.InheritedFlags().VisitAll(func(f *pflag.Flag) { once(t, help, f.Name) })
}

// once checks that the help lists the flag name exactly once.
func once(t *testing.T, help, name string) {
	t.Helper()
	if n := len(regexp.MustCompile(`(?m)^  (-\w, |    )--`+regexp.QuoteMeta(name)+`( |$)`).FindAllString(help, -1)); n != 1 {
		t.Errorf("--%s listed %d times", name, n)
	}
}

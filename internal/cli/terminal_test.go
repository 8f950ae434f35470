package cli

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/kubediff/kubediff/internal/testsync"
	"github.com/kubediff/kubediff/pkg/config"
)

// loadTo parses args for `kubediff watch` writing to out and returns the
// layered config.
func loadTo(t *testing.T, out io.Writer, args ...string) config.Config {
	t.Helper()
	root := newRootCommand("kubediff", out, &bytes.Buffer{})
	watch, _, err := root.Find([]string{"watch"})
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(watch)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A person at a terminal gets text, a pipe JSON, unless -o, the
// environment or the config file says which: as kubectl and gh decide.
func TestTextOnATerminalJSONInAPipe(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	go func() { _, _ = io.Copy(io.Discard, ptmx) }()
	t.Setenv("KUBEDIFF_OUTPUT", "")
	if got := loadTo(t, tty).Output; got != config.OutputText {
		t.Errorf("watch on a terminal: output %q, want text", got)
	}
	if got := loadTo(t, &bytes.Buffer{}).Output; got != config.OutputJSON {
		t.Errorf("watch into a pipe: output %q, want json", got)
	}
	if got := loadTo(t, tty, "-o", "json").Output; got != config.OutputJSON {
		t.Errorf("watch -o json on a terminal: output %q, want json", got)
	}
	if got := loadTo(t, tty, "--config", writeFile(t, "output: json\n")).Output; got != config.OutputJSON {
		t.Errorf("a config file's output: json on a terminal: output %q, want json", got)
	}
	t.Setenv("KUBEDIFF_OUTPUT", "json")
	if got := loadTo(t, tty).Output; got != config.OutputJSON {
		t.Errorf("KUBEDIFF_OUTPUT=json on a terminal: output %q, want json", got)
	}
}

// The history commands print as watch does: text on a terminal, JSON in
// a pipe, -o deciding when given.
func TestHistoryPrintsTextOnATerminal(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	t.Setenv("KUBEDIFF_OUTPUT", "")
	for _, tc := range []struct {
		out  io.Writer
		args []string
		want string
	}{
		{tty, nil, "text"},
		{&bytes.Buffer{}, nil, "json"},
		{tty, []string{"-o", "json"}, "json"},
		{&bytes.Buffer{}, []string{"-o", "text"}, "text"},
	} {
		root := newRootCommand("kubediff", tc.out, &bytes.Buffer{})
		history, _, err := root.Find([]string{"history"})
		if err != nil {
			t.Fatal(err)
		}
		if err := history.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		if got := recordFormat(history); got != tc.want {
			t.Errorf("history %v to %T: format %q, want %q", tc.args, tc.out, got, tc.want)
		}
	}
}

// diff and restore's diff colour their lines as watch colours records:
// on a terminal, or with --color always; never into a pipe by default.
func TestDiffsAreColouredOnATerminal(t *testing.T) {
	diff := "--- cm/a at 1\n+++ cm/a at 2\n@@ -1,2 +1,2 @@\n data:\n-  k: one\n+  k: two\n"
	want := "\x1b[1m--- cm/a at 1\x1b[0m\n\x1b[1m+++ cm/a at 2\x1b[0m\n\x1b[36m@@ -1,2 +1,2 @@\x1b[0m\n data:\n\x1b[31m-  k: one\x1b[0m\n\x1b[32m+  k: two\x1b[0m\n"
	if got := colorDiff(diff); got != want {
		t.Fatalf("coloured:\n%q\nwant\n%q", got, want)
	}
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	t.Setenv("NO_COLOR", "")
	for _, name := range []string{"diff", "restore"} {
		root := newRootCommand("kubediff", tty, &bytes.Buffer{})
		cmd, _, err := root.Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		var pipe bytes.Buffer
		if err := writeDiff(cmd, &pipe, diff); err != nil || pipe.String() != diff {
			t.Errorf("%s into a pipe: %q, %v; want it plain", name, pipe.String(), err)
		}
		if err := writeDiff(cmd, tty, diff); err != nil {
			t.Fatal(err)
		}
	}
	var seen testsync.Buffer
	go func() { _, _ = io.Copy(&seen, ptmx) }()
	testsync.Eventually(t, "both diffs coloured on the terminal", time.Minute, func() bool {
		return strings.Count(seen.String(), "\x1b[32m+  k: two\x1b[0m") == 2
	})
}

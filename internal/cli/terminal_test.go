package cli

import (
	"bytes"
	"io"
	"testing"

	"github.com/creack/pty"

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

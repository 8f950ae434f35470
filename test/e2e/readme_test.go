package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadmeFirstScreen runs the commands of the README's first screen
// (its sh blocks before the first "## " heading), in order, as a person
// who has never seen kubediff would, against the local control plane as
// their current kubeconfig context: clone (this checkout, instead of
// GitHub), build, install into a fresh HOME, watch (keeping its history
// in the default state dir, under that HOME), ask the history while the
// watcher runs, open the page, with no other flag. Changing the README
// changes what this test runs.
func TestReadmeFirstScreen(t *testing.T) {
	commands := firstScreenCommands(t)
	s := &readmeSession{t: t, home: t.TempDir(), dir: t.TempDir(), ns: newNamespace(t)}
	s.env = s.environment()
	for _, line := range commands {
		t.Logf("$ %s", line)
		for part := range strings.SplitSeq(line, " && ") {
			s.run(strings.TrimSpace(part))
		}
	}
	s.stopWatch()
	for _, want := range []string{"git clone", "make build", "make install", "kubediff watch", "kubediff history", "kubediff ui"} {
		if !strings.Contains(strings.Join(commands, "\n"), want) {
			t.Errorf("the README's first screen no longer says %q", want)
		}
	}
	if s.kept == "" {
		t.Error("no watch ran: the first screen does not show history on a laptop")
	}
	if _, err := os.Stat(filepath.Join(s.home, ".local", "state", "kubediff", "clusters")); err != nil {
		t.Errorf("the watch kept no history in the default state dir: %v", err)
	}
}

// firstScreenCommands reads the command lines of the sh blocks before the
// README's first "## " heading, without their comments.
func firstScreenCommands(t *testing.T) []string {
	t.Helper()
	screen, _ := readmeScreens(t)
	out := shCommands(screen)
	if len(out) < 5 {
		t.Fatalf("the README's first screen has %d commands: %q", len(out), out)
	}
	return out
}

// readmeSession is a newcomer's shell: a fresh HOME with the install's
// bin on PATH, a working directory, and the watcher left running.
type readmeSession struct {
	t         *testing.T
	home, dir string
	env       []string
	ns        string
	watch     *exec.Cmd
	watchOut  *syncBuffer
	kept      string // the ConfigMap made while a watcher kept a history
	changes   int
}

// environment is the newcomer's: HOME and PATH their own, the Go caches
// the test's (so the build is not from nothing), the local control plane
// as the current context, and an xdg-open that opens nothing.
func (s *readmeSession) environment() []string {
	opener := s.t.TempDir()
	if err := os.WriteFile(filepath.Join(opener, "xdg-open"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		s.t.Fatal(err)
	}
	goEnv, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		s.t.Fatal(err)
	}
	caches := strings.Fields(string(goEnv))
	var inherited []string
	for _, kv := range os.Environ() {
		// A newcomer's shell names no state dir: the default is theirs.
		if !strings.HasPrefix(kv, "KUBEDIFF_STATE_DIR=") && !strings.HasPrefix(kv, "XDG_STATE_HOME=") {
			inherited = append(inherited, kv)
		}
	}
	return append(inherited, "HOME="+s.home, "KUBECONFIG="+env.Kubeconfig,
		"PATH="+filepath.Join(s.home, ".local", "bin")+":"+opener+":"+os.Getenv("PATH"),
		"GOCACHE="+caches[0], "GOMODCACHE="+caches[1], "GOPATH="+caches[2])
}

// run runs one command as the README means it.
func (s *readmeSession) run(command string) {
	s.t.Helper()
	switch {
	case command == "make demo" || command == "make test":
		// The set-up commands of a checkout: make test is what runs this
		// test, and make demo watches until stopped; the newcomer's path
		// is the clone that follows.
		s.t.Logf("(not run here: %s)", command)
	case strings.HasPrefix(command, "cd "):
		s.dir = filepath.Join(s.dir, strings.TrimPrefix(command, "cd "))
	case strings.HasPrefix(command, "git clone "):
		// This checkout stands for GitHub's, under the same last name.
		origin := filepath.Join(s.t.TempDir(), "kubediff")
		if err := os.Symlink(repoRoot(s.t), origin); err != nil {
			s.t.Fatal(err)
		}
		s.shell(strings.Replace(command, "https://github.com/kubediff/kubediff", origin, 1))
	case strings.HasPrefix(command, "kubediff watch"):
		s.startWatch(command)
	case strings.HasPrefix(command, "kubediff ui"):
		s.openPage(command)
	case strings.HasPrefix(command, "kubediff history") && s.kept != "":
		// The watcher writes its history every second: a person reads it
		// seconds later, the test until it shows.
		eventually(s.t, command+" to list the change", func() bool {
			return printedAdded(s.shell(command), s.ns, s.kept)
		})
	default:
		s.shell(command)
	}
}

// shell runs command to its end and returns its output; a failure ends
// the test.
func (s *readmeSession) shell(command string) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", command)
	cmd.Dir, cmd.Env = s.dir, s.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("%s: %v\n%s", command, err, out)
	}
	return string(out)
}

// startWatch stops the watcher before, starts this one, waits until it
// watches, and checks that it prints a change made then.
func (s *readmeSession) startWatch(command string) {
	s.t.Helper()
	s.stopWatch()
	cmd := exec.Command("bash", "-c", "exec "+command)
	cmd.Dir, cmd.Env = s.dir, s.env
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.watch, s.watchOut = cmd, stdout
	s.t.Cleanup(func() { _ = cmd.Process.Kill() })
	eventually(s.t, command+" to watch", func() bool { return strings.Contains(stderr.String(), "msg=watching") })
	s.changes++
	name := fmt.Sprintf("first-hour-%d", s.changes)
	createConfigMap(s.t, s.ns, name)
	eventually(s.t, command+" to print the change", func() bool {
		return printedAdded(stdout.String(), s.ns, name)
	})
	if !strings.Contains(command, "--state-dir ''") {
		s.kept = name
	}
}

// stopWatch stops the running watcher as Ctrl-C does.
func (s *readmeSession) stopWatch() {
	s.t.Helper()
	if s.watch == nil {
		return
	}
	_ = s.watch.Process.Signal(syscall.SIGINT)
	if err := s.watch.Wait(); err != nil {
		s.t.Errorf("the watcher, stopped with Ctrl-C: %v", err)
	}
	s.watch = nil
}

// openPage starts kubediff ui and reads the kept change through the page
// it serves, as the browser would.
func (s *readmeSession) openPage(command string) {
	s.t.Helper()
	cmd := exec.Command("bash", "-c", "exec "+command)
	cmd.Dir, cmd.Env = s.dir, s.env
	out, err := cmd.StdoutPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, _ := bufio.NewReader(out).ReadString('\n')
	go func() { _, _ = io.Copy(io.Discard, out) }()
	page := strings.TrimSpace(strings.TrimPrefix(line, "kubediff history: "))
	if !strings.HasPrefix(page, "http://127.0.0.1:") {
		s.t.Fatalf("%s printed %q, not the page's URL", command, line)
	}
	client, base := uiClient(s.t, page)
	code, body := uiGet(s.t, client, base, "/api/v1/history/records?namespace="+s.ns)
	if code != 200 || (s.kept != "" && !strings.Contains(body, `"name":"`+s.kept+`"`)) {
		s.t.Errorf("the page's records: %d %s", code, body)
	}
}

// printedAdded reports whether out, text or JSON lines (a pipe is no
// terminal), says the ConfigMap ns/name was added.
func printedAdded(out, ns, name string) bool {
	if addedLine(ns, name).MatchString(out) {
		return true
	}
	for line := range strings.Lines(out) {
		if strings.Contains(line, `"type":"added"`) && strings.Contains(line, `"namespace":"`+ns+`"`) && strings.Contains(line, `"name":"`+name+`"`) {
			return true
		}
	}
	return false
}

// addedLine matches the text output's line of a ConfigMap's creation.
func addedLine(ns, name string) *regexp.Regexp {
	return regexp.MustCompile(`added +ConfigMap ` + regexp.QuoteMeta(ns+"/"+name) + `\b`)
}

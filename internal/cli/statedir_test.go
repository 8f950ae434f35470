package cli

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubediff/kubediff/pkg/state"
)

// useDefaultStateDir unsets what names a state dir and points
// XDG_STATE_HOME at a fresh directory, returning the default state
// root there.
func useDefaultStateDir(t *testing.T) string {
	t.Helper()
	t.Setenv("KUBEDIFF_STATE_DIR", "")
	os.Unsetenv("KUBEDIFF_STATE_DIR") // t.Setenv restores it afterwards
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	os.Unsetenv("KUBERNETES_SERVICE_HOST")
	xdg := t.TempDir()
	t.Setenv("XDG_STATE_HOME", xdg)
	return filepath.Join(xdg, "kubediff")
}

func TestDefaultStateRoot(t *testing.T) {
	useDefaultStateDir(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	tests := []struct {
		name, xdg, pod, want string
	}{
		{"XDG_STATE_HOME", "/xdg/state", "", "/xdg/state/kubediff"},
		{"no XDG_STATE_HOME", "", "", filepath.Join(home, ".local", "state", "kubediff")},
		{"a relative XDG_STATE_HOME is ignored, as the spec says", "state", "", filepath.Join(home, ".local", "state", "kubediff")},
		{"none in a Pod", "/xdg/state", "10.96.0.1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("XDG_STATE_HOME", tt.xdg)
			t.Setenv("KUBERNETES_SERVICE_HOST", tt.pod)
			if got := defaultStateRoot(); got != tt.want {
				t.Errorf("defaultStateRoot() = %q, want %q", got, tt.want)
			}
		})
	}
}

// With nothing naming a state dir, the history commands read the
// current context's history in the default state dir, say when there is
// none yet, and name every way to choose one when there is no default.
func TestHistoryCommandsReadTheDefaultStateDir(t *testing.T) {
	root := useDefaultStateDir(t)
	kubeconfig := unreachableKubeconfig(t) // current context c; never asked
	run := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := Run(context.Background(), append(args, "--kubeconfig", kubeconfig), &stdout, &stderr)
		return code, stderr.String()
	}
	dir := filepath.Join(root, "clusters", "c")
	if code, stderr := run("history", "--since", "1h"); code != exitError ||
		!strings.Contains(stderr, "no history yet in the default state dir "+dir) ||
		!strings.Contains(stderr, "--state-dir DIR, KUBEDIFF_STATE_DIR") {
		t.Errorf("no history yet: exit %d, stderr %q", code, stderr)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(stateDirWithHistory(t), dir); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"get", "cm", "settings", "-n", "default"}, {"blame", "cm/settings", "-n", "default"}} {
		if code, stderr := run(args...); code != exitError || !strings.Contains(stderr, "did not exist at") {
			t.Errorf("kubediff %s: exit %d, stderr %q; want the default state dir's history read", strings.Join(args, " "), code, stderr)
		}
	}
	if code, stderr := run("get", "cm", "settings", "-n", "default", "--cluster", "other"); code != exitError || !strings.Contains(stderr, filepath.Join(root, "clusters", "other")) {
		t.Errorf("--cluster other: exit %d, stderr %q; want the other context's default dir", code, stderr)
	}
	wantWays := []string{"--state-dir DIR", "KUBEDIFF_STATE_DIR", "$XDG_STATE_HOME/kubediff, else ~/.local/state/kubediff", "--server URL"}
	for name, args := range map[string][]string{
		"--state-dir ''": {"history", "--state-dir", ""},
		"in a Pod":       {"history"},
	} {
		if name == "in a Pod" {
			t.Setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
		}
		code, stderr := run(args...)
		for _, want := range wantWays {
			if code != exitUsage || !strings.Contains(stderr, want) {
				t.Errorf("%s: exit %d, stderr %q; want exit %d naming %s", name, code, stderr, exitUsage, want)
			}
		}
	}
}

// A watch with nothing naming a state dir keeps its history in the
// default one, saying so once on stderr; when another kubediff holds
// that dir it carries on without one, saying so, instead of refusing.
func TestWatchKeepsTheHistoryInTheDefaultStateDir(t *testing.T) {
	root := useDefaultStateDir(t)
	kubeconfig := unreachableKubeconfig(t)
	dir := filepath.Join(root, "clusters", "c")
	var stdout, stderr bytes.Buffer
	if code := Run(context.Background(), []string{"watch", "--kubeconfig", kubeconfig}, &stdout, &stderr); code != exitError {
		t.Fatalf("watch of a cluster not answering: exit %d, stderr %q", code, stderr.String())
	}
	if n := strings.Count(stderr.String(), "keeping the history in the default state dir"); n != 1 || !strings.Contains(stderr.String(), "dir="+dir) {
		t.Errorf("watch said where the history goes %d times (want once, naming %s):\n%s", n, dir, stderr.String())
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("the default state dir was not made: %v", err)
	}

	held, err := state.Open(dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	stderr.Reset()
	code := Run(context.Background(), []string{"watch", "--kubeconfig", kubeconfig}, &stdout, &stderr)
	if code != exitError || !strings.Contains(stderr.String(), "in use by another kubediff: this one keeps no history") ||
		!strings.Contains(stderr.String(), "connection refused") {
		t.Errorf("watch with the default dir held: exit %d, stderr %q; want it to carry on without a history (to the cluster's refusal)", code, stderr.String())
	}

	stderr.Reset()
	Run(context.Background(), []string{"watch", "--kubeconfig", kubeconfig, "--state-dir", ""}, &stdout, &stderr)
	if strings.Contains(stderr.String(), "default state dir") {
		t.Errorf("--state-dir '' still kept a history: %s", stderr.String())
	}
}

// With no cluster answering, completion offers the types the default
// state dir's history knows, as it does those of --state-dir.
func TestCompletionReadsTheDefaultStateDir(t *testing.T) {
	root := useDefaultStateDir(t)
	dir := filepath.Join(root, "clusters", "c")
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(stateDirWithHistory(t), dir); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	Run(context.Background(), []string{"__complete", "get", "--kubeconfig", unreachableKubeconfig(t), "configm"}, &stdout, &stderr)
	if !strings.Contains(stdout.String(), "configmaps") {
		t.Errorf("completing a type from the default state dir offers:\n%s\nstderr: %s", stdout.String(), stderr.String())
	}
}

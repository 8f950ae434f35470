package cli

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/state"
)

// stateDirWithHistory makes a state dir whose history begins now and
// knows the ConfigMap type.
func stateDirWithHistory(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	st, err := state.Open(dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetHistory(history.Policy{Retention: time.Hour, MaxBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	cms := discovery.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true, ShortNames: []string{"cm"}}
	if err := st.KeepTypes([]discovery.Resource{cms}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A question the history cannot answer says so instead of answering
// nothing or today's state: a window from before the history began, a
// window given backwards, a moment in the future.
func TestHistoryQuestionsItCannotAnswerSaySo(t *testing.T) {
	dir := stateDirWithHistory(t)
	tests := []struct {
		name string
		args []string
		code int
		want string // on stderr
	}{
		{"a window from before the history", []string{"history", "--from", "2h"}, 0, "history begins at"},
		// One grammar: days as --history-retention takes them, and now.
		{"--since in days", []string{"history", "--since", "7d"}, 0, "history begins at"},
		{"--from in days", []string{"history", "--from", "1.5d", "--until", "now"}, 0, "history begins at"},
		{"--since that is not a length of time", []string{"history", "--since", "a week"}, exitUsage, "want a length of time such as 15m, 2h or 7d"},
		{"a moment before the history names its beginning", []string{"get", "cm/settings", "-n", "default", "--at", "2h"}, exitError, "older than kubediff's history, which begins at"},
		{"a window given backwards", []string{"history", "--from", "10m", "--until", "20m"}, exitUsage, "is after --until"},
		{"a moment in the future", []string{"get", "cm/settings", "-n", "default", "--at", "2099-01-01T00:00:00Z"}, exitUsage, "is in the future"},
		{"a diff to the future", []string{"diff", "cm/settings", "-n", "default", "--from", "1m", "--to", "2099-01-01T00:00:00Z"}, exitUsage, "is in the future"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(context.Background(), append(tt.args, "--state-dir", dir), &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, want %d; stderr does not say %q:\n%s%s", code, tt.code, tt.want, stdout.String(), stderr.String())
			}
		})
	}
}

// kubectl's habits work: TYPE NAME as well as TYPE/NAME, and get without
// --at asks about now. Each object here never existed, so each command
// reaches the history and says so (exit 1), rather than refusing its
// arguments (exit 2).
func TestKubectlHabitsReachTheHistory(t *testing.T) {
	dir := stateDirWithHistory(t)
	for _, args := range [][]string{
		{"get", "cm", "settings", "-n", "default"},
		{"get", "cm/settings", "-n", "default"},
		{"blame", "cm", "settings", "-n", "default"},
		{"diff", "cm", "settings", "-n", "default", "--from", "now"},
	} {
		var stdout, stderr bytes.Buffer
		code := Run(context.Background(), append(args, "--state-dir", dir), &stdout, &stderr)
		if code != exitError || !strings.Contains(stderr.String(), "cm/settings in namespace default") {
			t.Errorf("%s: exit %d, want %d saying what it looked for:\n%s", strings.Join(args, " "), code, exitError, stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	// An object the history never saw is said, as get says it (exit 1).
	if code := Run(context.Background(), []string{"history", "cm", "settings", "-n", "default", "--state-dir", dir}, &stdout, &stderr); code != exitError ||
		!strings.Contains(stderr.String(), "holds no change of cm settings in namespace default") || !strings.Contains(stderr.String(), "(it begins at 20") {
		t.Errorf("history cm settings: exit %d, stderr %q; want exit 1 saying it holds no change of it", code, stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	if code := Run(context.Background(), []string{"get", "cm", "settings", "extra", "--state-dir", dir}, &stdout, &stderr); code != exitUsage ||
		!strings.Contains(stderr.String(), "TYPE/NAME or TYPE NAME") {
		t.Errorf("three arguments: exit %d, stderr %q; want a usage error naming both forms", code, stderr.String())
	}
}

// get prints an object as kubectl get does: without managedFields (half
// of it) unless --show-managed-fields asks.
func TestGetLeavesOutManagedFields(t *testing.T) {
	raw := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","managedFields":[{"manager":"kubectl-edit"}]},"data":{"k":"v"}}`)
	for _, show := range []bool{false, true} {
		for _, format := range []string{"yaml", "json"} {
			var out bytes.Buffer
			if err := writeObject(&out, raw, format, show); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(out.String(), "managedFields"); got != show || !strings.Contains(out.String(), "name") {
				t.Errorf("-o %s, --show-managed-fields=%v: managedFields printed %v:\n%s", format, show, got, out.String())
			}
		}
	}
}

// The history is found through KUBEDIFF_STATE_DIR as through
// --state-dir, and with it empty (no state dir) the error names both ways, and that a
// state dir is read while its kubediff runs too.
func TestTheStateDirFromTheEnvironment(t *testing.T) {
	dir := stateDirWithHistory(t)
	t.Setenv("KUBEDIFF_STATE_DIR", "")
	var stdout, stderr bytes.Buffer
	if code := Run(context.Background(), []string{"get", "cm", "settings", "-n", "default"}, &stdout, &stderr); code != exitUsage ||
		!strings.Contains(stderr.String(), "--state-dir DIR, KUBEDIFF_STATE_DIR") || !strings.Contains(stderr.String(), "while the kubediff writing it runs") {
		t.Errorf("no history named: exit %d, stderr %q", code, stderr.String())
	}
	t.Setenv("KUBEDIFF_STATE_DIR", dir)
	stderr.Reset()
	if code := Run(context.Background(), []string{"get", "cm", "settings", "-n", "default"}, &stdout, &stderr); code != exitError ||
		!strings.Contains(stderr.String(), "did not exist at") {
		t.Errorf("KUBEDIFF_STATE_DIR=%s: exit %d, stderr %q; want the history read", dir, code, stderr.String())
	}
}

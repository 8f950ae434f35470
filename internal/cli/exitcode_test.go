package cli

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/kubediff/kubediff/internal/testsync"
	"github.com/kubediff/kubediff/pkg/state"
)

// unreachableKubeconfig writes a kubeconfig for a server that does not
// answer: a port that was just free on loopback.
func unreachableKubeconfig(t *testing.T) string {
	return testsync.UnreachableKubeconfig(t, freeAddress(t))
}

// freeAddress is a loopback address that was just free: nothing
// answers there.
func freeAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// A script or a supervisor tells "fix the command line" (2) from "it
// failed while running, try again" (1) by the exit code.
func TestExitCodesTellUsageFromRuntimeFailures(t *testing.T) {
	lockedDir := t.TempDir()
	held, err := state.Open(lockedDir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = held.Close() })
	unreachable := unreachableKubeconfig(t)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown command", []string{"wtch"}, exitUsage, `unknown command "wtch"`},
		{"argument to a command that takes none", []string{"version", "extra"}, exitUsage, `unknown command "extra"`},
		{"unknown flag", []string{"watch", "--bogus"}, exitUsage, "unknown flag: --bogus"},
		{"malformed http address", []string{"watch", "--http-address", "8080"}, exitUsage, `httpAddress (--http-address): "8080" is not host:port`},
		{"cluster not answering", []string{"watch", "--kubeconfig", unreachable}, exitError, "connection refused"},
		{"cluster not answering, resources", []string{"resources", "--kubeconfig", unreachable}, exitError, "connection refused"},
		{"state dir in use by another kubediff", []string{"watch", "--kubeconfig", unreachable, "--state-dir", lockedDir}, exitError, "in use by a running kubediff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("kubediff %s: exit %d, stderr %q; want exit %d saying %q", strings.Join(tt.args, " "), code, stderr.String(), tt.code, tt.want)
			}
		})
	}
}

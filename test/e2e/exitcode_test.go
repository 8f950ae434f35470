package e2e

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Against a cluster that answers, what fails while kubediff starts up
// with a valid command line exits 1, and a mistake on the command line
// exits 2 (internal/cli's unit tests cover the cases needing no cluster).
func TestRuntimeFailuresExitOneUsageErrorsTwo(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := t.TempDir()
	missingSecret := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(missingSecret, []byte(`
sinks:
  - name: audit
    type: webhook
    url: http://127.0.0.1:1/hook
    secretFile: `+filepath.Join(dir, "not-mounted")+`
`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"a sink's secret file missing", []string{"--config", missingSecret}, 1, "sinks[audit]: secretFile"},
		{"the http address taken", []string{"--http-address", taken.Addr().String()}, 1, "address already in use"},
		{"an unknown type", []string{"--resources", "deploymnts"}, 2, `"deploymnts"`},
		// A device's reads never end (and a FIFO's open waits for a
		// writer): refused at start, not followed until SIGTERM is ignored.
		{"an audit log that is a device", []string{"--audit-log", "/dev/zero"}, 2, "--audit-log (audit.log.path) /dev/zero is a character device, not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr syncBuffer
			args := append([]string{"watch", "--kubeconfig", env.Kubeconfig, "-n", "default"}, tt.args...)
			if code := runCLI(&stdout, &stderr, args...); code != tt.code || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d saying %q", code, stderr.String(), tt.code, tt.want)
			}
		})
	}
}

package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// deadServer is the URL of a loopback port where nothing answers.
func deadServer(t *testing.T) string { return "http://" + freeAddress(t) }

// Each error a newcomer meets in the first hour says what is wrong and
// what to do, once, with the exit code docs/configuration.md gives.
func TestFirstHourErrorsSayWhatToDo(t *testing.T) {
	dir := t.TempDir()
	noExtension := filepath.Join(dir, "config")
	if err := os.WriteFile(noExtension, []byte("output: txt\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.yaml")
	if err := os.WriteFile(huge, []byte("output: "+strings.Repeat("x", 20<<20)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	history := stateDirWithHistory(t)
	// A moment the history holds: after it began, not in the future.
	// ("1s" was before it began when the test ran within a second.)
	now := time.Now().UTC().Format(time.RFC3339Nano)
	kubeconfig := unreachableKubeconfig(t)
	certificate := filepath.Join(dir, "kind-kubeconfig")
	kc, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kc = []byte(strings.Replace(string(kc), "{token: t}", "{client-certificate-data: Y2VydA==, client-key-data: a2V5}", 1))
	if err := os.WriteFile(certificate, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want []string // on stderr
	}{
		{"--config names a directory", []string{"watch", "--config", dir}, exitUsage,
			[]string{"config file " + dir + " is a directory", "wants a YAML file"}},
		{"a config file without an extension is read as YAML", []string{"watch", "--config", noExtension}, exitUsage,
			[]string{noExtension, `output: "txt" is not one of json, text, none`}},
		{"a 20 MB value is not echoed whole", []string{"watch", "--config", huge}, exitUsage,
			[]string{huge, "output: \"xxxxxxxx", "… (20971520 bytes) is not one of json, text, none"}},
		{"get without -n says where it looked", []string{"get", "cm/web", "--at", now, "--kubeconfig", kubeconfig, "--state-dir", history}, exitError,
			[]string{"cm/web in namespace default (your kubeconfig context's, or default: -n names another) did not exist at"}},
		{"get with -n says where it looked", []string{"get", "cm/web", "-n", "shop", "--at", now, "--state-dir", history}, exitError,
			[]string{"cm/web in namespace shop did not exist at"}},
		{"diff without -n says where it looked", []string{"diff", "cm/web", "--from", now, "--kubeconfig", kubeconfig, "--state-dir", history}, exitError,
			[]string{"cm/web in namespace default (your kubeconfig context's, or default: -n names another) existed at neither moment"}},
		{"TYPE/NAME/extra from a state dir", []string{"get", "deploy/web/extra", "--at", "1m", "--state-dir", history}, exitUsage,
			[]string{`"deploy/web/extra": want TYPE/NAME with one slash, such as deploy/web`}},
		{"TYPE/NAME/extra through --server", []string{"get", "deploy/web/extra", "--at", "1m", "--kubeconfig", kubeconfig, "--server", deadServer(t)}, exitUsage,
			[]string{`"deploy/web/extra": want TYPE/NAME with one slash, such as deploy/web`}},
		{"a client certificate through --server", []string{"history", "--kubeconfig", certificate, "--server", deadServer(t)}, exitUsage,
			[]string{"client certificate", "use --via-apiserver", "kubectl create token NAME", "docs/history.md"}},
		{"ui --server to a dead port refuses to start", []string{"ui", "--no-browser", "--kubeconfig", kubeconfig, "--server", deadServer(t)}, exitError,
			[]string{"does not answer", "connection refused", "is kubediff running with this --http-address?"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr %.2000s", code, tt.code, stderr.String())
			}
			for _, want := range tt.want {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr does not say %q:\n%.2000s", want, stderr.String())
				}
			}
			if lines := strings.Count(stderr.String(), "\n"); lines != 1 || stderr.Len() > 1000 {
				t.Errorf("want one short line, got %d lines, %d bytes: %.2000s", lines, stderr.Len(), stderr.String())
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout: %.500s", stdout.String())
			}
		})
	}
}

func TestShortenErrorCapsQuotedValues(t *testing.T) {
	long := strings.Repeat("é", 100)
	got := shortenError(`key: "` + long + `" is bad, "short" stays; unterminated "x`)
	want := `key: "` + strings.Repeat("é", 40) + `"… (200 bytes) is bad, "short" stays; unterminated "x`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := shortenError(strings.Repeat("y", 5000)); len(got) > maxErrorLen+40 || !strings.HasSuffix(got, "(3000 bytes more)") {
		t.Errorf("a long message is not cut: %d bytes, ends %q", len(got), got[len(got)-30:])
	}
}

package notify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExpandEnvOnlyExpandsBracedReferences(t *testing.T) {
	t.Setenv("KD_TOKEN", "tok")
	if got := ExpandEnv("a$b${KD_TOKEN}$1 ${KD_MISSING}x"); got != "a$btok$1 x" {
		t.Fatalf("ExpandEnv = %q", got)
	}
}

func TestReadSecretNeverShowsTheValue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte("s3cret-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadSecret("", path, "tokenFile"); err != nil || got != "s3cret-value" {
		t.Fatalf("ReadSecret = %q, %v; want the file's trimmed content", got, err)
	}
	_, err := ReadSecret("", filepath.Join(t.TempDir(), "missing"), "tokenFile")
	if err == nil || !strings.HasPrefix(err.Error(), "tokenFile: ") {
		t.Fatalf("missing file: err = %v, want one naming tokenFile", err)
	}
}

// A sink's URL in a log line keeps what tells a person which sink it is
// (scheme, host, port) and nothing that may be a credential: an
// incoming webhook's path is its secret.
func TestSafeURLKeepsTheHostOnly(t *testing.T) {
	for raw, want := range map[string]string{
		"https://hooks.slack.com/services/T0/B0/XXXXsecret":                "https://hooks.slack.com/…",
		"https://discord.com/api/webhooks/123/XXXXsecret?wait=true":        "https://discord.com/…",
		"https://user:XXXXsecret@collector.example:4318/v1/logs":           "https://collector.example:4318/…",
		"http://receiver.monitoring.svc:8080?token=XXXXsecret":             "http://receiver.monitoring.svc:8080",
		"http://receiver.monitoring.svc:8080/":                             "http://receiver.monitoring.svc:8080",
		"https://org.webhook.office.com/webhookb2/a@b/IncomingWebhook/c/d": "https://org.webhook.office.com/…",
	} {
		u, err := ParseHTTPURL("url", raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := SafeURL(u); got != want {
			t.Errorf("SafeURL(%s) = %q, want %q", raw, got, want)
		}
	}
}

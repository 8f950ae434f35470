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

package notifytest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Golden compares got with testdata/<file>, first rewriting the file when
// update is set (a test's -update flag), so that a sink's output or
// payload change shows as a reviewed diff.
func Golden(t testing.TB, file string, got []byte, update bool) {
	t.Helper()
	golden := filepath.Join("testdata", file)
	if update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("output differs from %s (go test -update rewrites it):\n%s", golden, got)
	}
}

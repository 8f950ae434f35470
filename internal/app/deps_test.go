package app

import (
	"os/exec"
	"strings"
	"testing"
)

// The program runs without the command line: nothing it depends on
// imports cobra or viper (internal/cli alone does), so it can be embedded
// or driven by another front end, as stern's library is.
func TestProgramDoesNotDependOnTheCommandLine(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/spf13/cobra") || strings.HasPrefix(pkg, "github.com/spf13/viper") || strings.HasSuffix(pkg, "/internal/cli") {
			t.Errorf("internal/app depends on %s", pkg)
		}
	}
}

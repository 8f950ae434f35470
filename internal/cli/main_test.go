package cli

import (
	"os"
	"testing"
)

// TestMain keeps the tests' commands from the default state dir in the
// home of whoever runs them: an empty KUBEDIFF_STATE_DIR names none.
// The tests of the default unset it.
func TestMain(m *testing.M) {
	os.Setenv("KUBEDIFF_STATE_DIR", "")
	os.Exit(m.Run())
}

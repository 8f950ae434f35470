package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubediff/kubediff/internal/testsync"
)

// A test binary that dies without stopping what it started (a panic, a
// timeout) leaves nothing running: the reaper kills its control plane.
// Here the control plane is a sleep the dying process started.
func TestWhatADyingTestStartedIsKilled(t *testing.T) {
	if os.Getenv("KUBEDIFF_REAPER_CHILD") == "1" {
		sleep := exec.Command("sleep", "600")
		if err := sleep.Start(); err != nil {
			t.Fatal(err)
		}
		reapWithUs(childrenNamed("sleep"))
		fmt.Printf("sleep pid %d\n", sleep.Process.Pid)
		os.Exit(2) // as a panicked test binary: no cleanup runs
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWhatADyingTestStartedIsKilled$")
	cmd.Env = append(os.Environ(), "KUBEDIFF_REAPER_CHILD=1")
	out, _ := cmd.Output()
	text := strings.TrimSpace(string(out))
	pid, err := strconv.Atoi(strings.TrimPrefix(text, "sleep pid "))
	if err != nil {
		t.Fatalf("the dying process said %q", text)
	}
	testsync.Eventually(t, "the orphaned sleep to be killed", 30*time.Second, func() bool {
		return syscall.Kill(pid, 0) != nil
	})
}

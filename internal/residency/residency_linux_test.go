package residency

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

func rssFileKB(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "RssFile:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

// Released, the binary's pages stop counting in RSS (the test goes on
// running: what it uses is mapped again from the page cache).
func TestReleaseBinaryPagesLowersRSS(t *testing.T) {
	before := rssFileKB(t)
	ReleaseBinaryPages()
	after := rssFileKB(t)
	t.Logf("RssFile %d kB → %d kB", before, after)
	if after >= before {
		t.Errorf("RssFile %d kB after release, want under %d kB", after, before)
	}
}

func TestReadOnlyMappingOf(t *testing.T) {
	const exe = "/usr/bin/kubediff"
	for _, tt := range []struct {
		line string
		ok   bool
	}{
		{"00400000-0207a000 r-xp 00000000 fd:01 123 /usr/bin/kubediff", true},
		{"0207a000-0410d000 r--p 01c7a000 fd:01 123 /usr/bin/kubediff", true},
		{"0410d000-041b8000 rw-p 03d0d000 fd:01 123 /usr/bin/kubediff", false}, // .data: written
		{"7f90816ce000-7f9081aee000 rw-p 00000000 00:00 0", false},
		{"7f0000000000-7f0000001000 r-xp 00000000 fd:01 9 /usr/lib/other.so", false},
	} {
		start, end, ok := readOnlyMappingOf(tt.line, exe)
		if ok != tt.ok || (ok && start >= end) {
			t.Errorf("%q: %x-%x %v, want ok %v", tt.line, start, end, ok, tt.ok)
		}
	}
}

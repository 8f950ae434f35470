package testenv

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kubediff/kubediff/internal/testsync"
	"github.com/kubediff/kubediff/pkg/record"
)

// Eventually polls ok until it holds, failing t after within
// (testsync.Eventually).
func Eventually(t testing.TB, what string, within time.Duration, ok func() bool) {
	t.Helper()
	testsync.Eventually(t, what, within, ok)
}

// ParseRecords parses kubediff's JSON lines, failing t on a line that is
// not a record.
func ParseRecords(t testing.TB, out string) []record.Change {
	t.Helper()
	var recs []record.Change
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var c record.Change
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("stdout line is not a JSON record: %v\n%s", err, sc.Text())
		}
		recs = append(recs, c)
	}
	return recs
}

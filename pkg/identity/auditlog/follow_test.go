package auditlog

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubediff/kubediff/internal/testsync"
	"github.com/kubediff/kubediff/pkg/identity/audit"
	"github.com/kubediff/kubediff/pkg/identity/identitytest"
)

// ids are the ids eventLine was given of the writes notes holds, in
// order, read from the resourceVersions they made: a write's own ID is
// no longer the line's audit ID (a client may set that), but a digest.
func ids(notes *identitytest.Recorder) string {
	var ids []string
	for _, w := range notes.All() {
		ids = append(ids, strings.TrimPrefix(w.ResourceVersion, "rv-"))
	}
	return strings.Join(ids, " ")
}

// eventLine is one audit log line: alice patched shop/web, making
// resourceVersion rv, now.
func eventLine(id string) string {
	return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":%q,"stage":"ResponseComplete",`+
		`"requestURI":"/apis/apps/v1/namespaces/shop/deployments/web","verb":"patch","user":{"username":"alice"},`+
		`"objectRef":{"resource":"deployments","namespace":"shop","name":"web","apiGroup":"apps"},"responseStatus":{"code":200},`+
		`"responseObject":{"kind":"Deployment","metadata":{"name":"web","uid":"u-web","resourceVersion":%q}},"stageTimestamp":%q}`+"\n",
		id, "rv-"+id, time.Now().UTC().Format(time.RFC3339Nano))
}

func appendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// newReader is a reader of path started as Follow starts one, which the
// test steps itself.
func newReader(t *testing.T, path string, log *testsync.Buffer) (*reader, *identitytest.Recorder) {
	t.Helper()
	notes := &identitytest.Recorder{}
	r := &reader{path: path, notes: notes, log: slog.New(slog.NewTextHandler(log, nil)), window: audit.NewWindow(0)}
	if err := r.openAtEnd(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.close)
	return r, notes
}

func TestReader(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before is in the file at start; then each write is appended
		// (a function does more) and the reader steps.
		before string
		steps  []func(t *testing.T, path string)
		want   string
		// wantLog is in the log, unwantedLog is not.
		wantLog, unwantedLog string
	}{
		{name: "starts at the end", before: eventLine("old"), steps: []func(*testing.T, string){write(eventLine("a"))}, want: "a"},
		{name: "started inside a line, skips its end", before: eventLine("old")[:40],
			steps: []func(*testing.T, string){write(eventLine("old")[40:] + eventLine("a"))}, want: "a", unwantedLog: "not audit events"},
		{name: "a line waits for its end", steps: []func(*testing.T, string){write(eventLine("a")[:50]), write(eventLine("a")[50:])}, want: "a", unwantedLog: "not audit events"},
		{name: "rotation: the old file's last lines, then the new file", steps: []func(*testing.T, string){
			write(eventLine("a")),
			func(t *testing.T, path string) {
				appendTo(t, path, eventLine("b")) // written, not yet read, when the file is renamed
				rename(path)
				appendTo(t, path, eventLine("c"))
			},
			write(eventLine("d")),
		}, want: "a b c d"},
		{name: "two rotations between reads: the file in between is read too", steps: []func(*testing.T, string){
			write(eventLine("a")),
			func(t *testing.T, path string) {
				appendTo(t, path, eventLine("b"))
				renameAt(path, "2026-11-25T09-00-00.000")
				appendTo(t, path, eventLine("c")) // a file kubediff never opened ...
				renameAt(path, "2026-11-25T09-00-01.000")
				appendTo(t, path, eventLine("d")) // ... before the newest
			},
			write(eventLine("e")),
		}, want: "a b c d e"},
		{name: "older rotated files are not read again", before: "", steps: []func(*testing.T, string){
			func(t *testing.T, path string) {
				older := strings.TrimSuffix(path, ".log") + "-2026-11-24T09-00-00.000.log"
				appendTo(t, older, eventLine("old"))
				past := time.Now().Add(-time.Hour)
				if err := os.Chtimes(older, past, past); err != nil {
					t.Fatal(err)
				}
				appendTo(t, path, eventLine("a"))
			},
			func(t *testing.T, path string) { rename(path); appendTo(t, path, eventLine("b")) },
		}, want: "a b"},
		{name: "removed, then made again", steps: []func(*testing.T, string){
			write(eventLine("a")),
			func(t *testing.T, path string) { os.Remove(path) },
			write(eventLine("b")),
		}, want: "a b"},
		{name: "truncated", steps: []func(*testing.T, string){
			write(eventLine("a")),
			func(t *testing.T, path string) { os.Truncate(path, 0) },
			write(eventLine("b")),
		}, want: "a b"},
		{name: "a line that is no event is skipped, said once", steps: []func(*testing.T, string){
			write("not json\n{\"also\":\"not\"}\n"), write(eventLine("a")),
		}, want: "a", wantLog: "reading audit events again"},
		{name: "a replayed line is noted once", steps: []func(*testing.T, string){write(eventLine("a") + eventLine("a"))}, want: "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.log")
			if tc.before != "" {
				appendTo(t, path, tc.before)
			}
			log := &testsync.Buffer{}
			r, notes := newReader(t, path, log)
			for _, step := range tc.steps {
				step(t, path)
				r.step(context.Background())
			}
			if got := ids(notes); got != tc.want {
				t.Errorf("noted %q, want %q", got, tc.want)
			}
			if !strings.Contains(log.String(), tc.wantLog) || (tc.unwantedLog != "" && strings.Contains(log.String(), tc.unwantedLog)) {
				t.Errorf("log:\n%s\nwant %q in it, %q not", log, tc.wantLog, tc.unwantedLog)
			}
		})
	}
}

func write(text string) func(*testing.T, string) {
	return func(t *testing.T, path string) { appendTo(t, path, text) }
}

// rename moves the file aside as the API server's rotation does.
func rename(path string) { renameAt(path, "2026-11-25T09-00-00.000") }

// renameAt moves the file aside as the API server's rotation (lumberjack)
// does at the moment stamped.
func renameAt(path, stamp string) {
	_ = os.Rename(path, strings.TrimSuffix(path, ".log")+"-"+stamp+".log")
}

// Follow on its own goroutine: a file missing at start is waited for
// with one warning and one line when it comes; a rotation is followed.
func TestFollowAFileMissingAtStartAcrossRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	log := &testsync.Buffer{}
	notes := &identitytest.Recorder{}
	stop, err := Follow(path, audit.Options{}, notes, slog.New(slog.NewTextHandler(log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	appendTo(t, path, eventLine("a"))
	testsync.Eventually(t, "the first write", 30*time.Second, func() bool { return ids(notes) == "a" })
	rename(path)
	appendTo(t, path, eventLine("b"))
	testsync.Eventually(t, "the write in the new file", 30*time.Second, func() bool { return ids(notes) == "a b" })
	if n := strings.Count(log.String(), "does not exist yet"); n != 1 {
		t.Errorf("said %d times that the file is missing, want once:\n%s", n, log)
	}
	if n := strings.Count(log.String(), "audit log appeared"); n != 1 {
		t.Errorf("said %d times that the file appeared, want once:\n%s", n, log)
	}
}

func TestFollowAnUnreadableFileNamesTheKey(t *testing.T) {
	_, err := Follow(t.TempDir(), audit.Options{}, &identitytest.Recorder{}, slog.Default())
	if err == nil || !strings.Contains(err.Error(), "audit.log.path") {
		t.Fatalf("following a directory: error %v, want one naming audit.log.path", err)
	}
}

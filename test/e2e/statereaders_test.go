package e2e

import (
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadersNeverLockTheWriterOut: a `kubediff ui --state-dir` left
// open on a stopped kubediff's state dir does not keep a watcher from
// starting with that dir; while the watcher runs and keeps writing, the
// open page and `history`, `get` and `diff` on the dir see its new
// records (through the socket the watcher serves in the dir); once it
// stops, they read the file again.
func TestReadersNeverLockTheWriterOut(t *testing.T) {
	ns, dir := stateDirWithOneRecord(t)
	page := startUI(t, "--state-dir", dir)
	client, base := uiClient(t, page)
	records := func() string {
		t.Helper()
		code, body := uiGet(t, client, base, "/api/v1/history/records?namespace="+ns)
		if code != http.StatusOK {
			t.Fatalf("the page's records: %d %s", code, body)
		}
		return body
	}
	if body := records(); !strings.Contains(body, `"name":"settings"`) {
		t.Fatalf("the page does not show the kept record: %s", body)
	}

	w := startBinary(t, "watch", "-n", ns, "--state-dir", dir) // fails the test unless it syncs
	w.logOnFailure()
	before := time.Now().UTC().Format(time.RFC3339Nano)
	createConfigMap(t, ns, "second")
	w.waitRecords("ConfigMap", ns, "second", 1)
	eventually(t, "the open page to show the running watcher's new record", func() bool {
		return strings.Contains(records(), `"name":"second"`)
	})
	setConfigMap(t, ns, "second", "1")
	w.waitRecords("ConfigMap", ns, "second", 2)
	var listed string
	defer func() {
		if t.Failed() {
			t.Logf("history on the dir printed:\n%s", listed)
		}
	}()
	eventually(t, "history on the dir to list the new records", func() bool {
		out, code := cliOutput(t, "history", "--state-dir", dir, "-n", ns, "-o", "text")
		listed = out
		return code == 0 && regexp.MustCompile(`added +ConfigMap `+ns+`/second`).MatchString(out) && strings.Contains(out, "updated ConfigMap "+ns+"/second")
	})
	if out, code := cliOutput(t, "get", "cm/second", "-n", ns, "--at", "0s", "--state-dir", dir); code != 0 || !strings.Contains(out, `v: "1"`) {
		t.Errorf("get on the dir of a running watcher: exit %d\n%s", code, out)
	}
	if out, code := cliOutput(t, "diff", "cm/second", "-n", ns, "--from", before, "--state-dir", dir); code != 0 || !strings.Contains(out, `+  v: "1"`) {
		t.Errorf("diff on the dir of a running watcher: exit %d\n%s", code, out)
	}

	stopWith(t, w, syscall.SIGTERM)
	if body := records(); !strings.Contains(body, `"name":"second"`) {
		t.Errorf("after the watcher stopped, the page lost its records: %s", body)
	}
	w = startBinary(t, "watch", "-n", ns, "--state-dir", dir) // the page, still open, keeps nothing locked
	stopWith(t, w, syscall.SIGTERM)
}

// TestADeepStateDirIsReadWhileKubediffRuns: a state dir whose socket path
// is longer than a unix socket's address allows (108 bytes, easily
// reached in a CI workspace) is still read through the running
// kubediff, not refused as in use.
func TestADeepStateDirIsReadWhileKubediffRuns(t *testing.T) {
	ns := newNamespace(t)
	dir := filepath.Join(t.TempDir(), strings.Repeat("workspace-", 6), strings.Repeat("state-", 6))
	w := startBinary(t, "watch", "-n", ns, "--state-dir", dir)
	w.logOnFailure()
	createConfigMap(t, ns, "deep")
	w.waitRecords("ConfigMap", ns, "deep", 1)
	var out string
	var code int
	eventually(t, "history on the deep dir to list the record", func() bool {
		out, code = cliOutput(t, "history", "--state-dir", dir, "-n", ns, "-o", "text")
		return code == 0 && strings.Contains(out, ns+"/deep")
	})
	if strings.Contains(w.stderr.String(), "cannot serve the history") {
		t.Errorf("kubediff warned it cannot serve the dir:\n%s", w.stderr.String())
	}
}

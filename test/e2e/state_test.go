package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubediff/kubediff/pkg/record"
)

// TestRestartWithStateDirReportsWhatChangedMeanwhile: kubediff with a
// state dir is stopped (SIGTERM); 10 objects are changed, one created and
// one deleted; started again, it reports exactly those 12 changes, once
// each, marked as observed after a gap, with the server's field-manager
// attribution. Started once more with nothing changed, it reports nothing.
func TestRestartWithStateDirReportsWhatChangedMeanwhile(t *testing.T) {
	ns := newNamespace(t)
	cms := clients.CoreV1().ConfigMaps(ns)
	create := func(name string) {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"phase": "up"}}
		if _, err := cms.Create(bg, cm, metav1.CreateOptions{FieldManager: "restart-test"}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		create(fmt.Sprintf("cm-%d", i))
	}
	create("doomed")
	dir := filepath.Join(t.TempDir(), "state")
	args := []string{"watch", "-n", ns, "--state-dir", dir}

	first := startBinary(t, args...)
	// A change while it runs is reported live, and stored.
	patch := func(name, phase string) {
		t.Helper()
		p := fmt.Sprintf(`{"data":{"phase":%q}}`, phase)
		if _, err := cms.Patch(bg, name, types.MergePatchType, []byte(p), metav1.PatchOptions{FieldManager: "restart-test"}); err != nil {
			t.Fatal(err)
		}
	}
	patch("cm-0", "live")
	first.waitRecords("ConfigMap", ns, "cm-0", 1)
	stopWith(t, first, syscall.SIGTERM)

	for i := range 10 {
		patch(fmt.Sprintf("cm-%d", i), "down")
	}
	create("born")
	if err := cms.Delete(bg, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	second := startBinary(t, args...)
	got := untilMarker(t, second, ns, "marker-1")
	var summary []string
	for _, c := range got {
		summary = append(summary, c.Type+" "+c.Name)
		if !c.AfterGap {
			t.Errorf("%s %s: not marked as observed after a gap", c.Type, c.Name)
		}
		if c.Type == record.Updated && (c.Manager == nil || c.Manager.Name != "restart-test") {
			t.Errorf("%s %s: manager = %+v, want restart-test", c.Type, c.Name, c.Manager)
		}
	}
	sort.Strings(summary)
	want := []string{"added born", "deleted doomed"}
	for i := range 10 {
		want = append(want, fmt.Sprintf("updated cm-%d", i))
	}
	sort.Strings(want)
	if strings.Join(summary, ", ") != strings.Join(want, ", ") {
		t.Fatalf("after the restart got %d records:\n  %s\nwant the 12 changes made while down:\n  %s", len(summary), strings.Join(summary, "\n  "), strings.Join(want, "\n  "))
	}
	t.Logf("after the restart: %s", strings.Join(summary, ", "))
	stopWith(t, second, syscall.SIGTERM)

	third := startBinary(t, args...)
	if got := untilMarker(t, third, ns, "marker-2"); len(got) != 0 {
		t.Fatalf("nothing changed, yet after the restart: %+v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "state.db")); err != nil {
		t.Fatal(err)
	}
}

// untilMarker creates a ConfigMap and waits for its record: everything
// kubediff reports before it is in. It returns the records before the
// marker's.
func untilMarker(t *testing.T, r *run, ns, marker string) []record.Change {
	t.Helper()
	if _, err := clients.CoreV1().ConfigMaps(ns).Create(bg, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: marker}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.waitRecords("ConfigMap", ns, marker, 1)
	var before []record.Change
	for _, c := range r.records() {
		if c.Name == marker {
			break
		}
		before = append(before, c)
	}
	return before
}

// stopWith stops a kubediff binary with sig and waits for a clean exit.
func stopWith(t *testing.T, r *run, sig os.Signal) {
	t.Helper()
	r.stop = func() { _ = r.process.Signal(sig) }
	r.shutdown()
	if t.Failed() {
		t.FailNow()
	}
}

// TestRestartDoesNotReportUnchangedRedactedValues: a Secret and a
// ConfigMap with a sensitive key get a label while kubediff (with a state
// dir) is down. After the restart each record shows the label alone: the
// redacted values did not change, and the hashes standing for them, kept
// with the state, say so.
func TestRestartDoesNotReportUnchangedRedactedValues(t *testing.T) {
	ns := newNamespace(t)
	kubectl(t, "", "-n", ns, "create", "secret", "generic", "db", "--from-literal=password=restart-canary", "--from-literal=user=admin")
	kubectl(t, "", "-n", ns, "create", "configmap", "app", "--from-literal=db_password=restart-canary")
	dir := filepath.Join(t.TempDir(), "state")
	args := []string{"watch", "-n", ns, "--state-dir", dir}
	stopWith(t, startBinary(t, args...), syscall.SIGTERM)
	kubectl(t, "", "-n", ns, "label", "secret/db", "configmap/app", "touched=yes")
	second := startBinary(t, args...)
	// Each type relists on its own after a restart: the two records may
	// come in either order, and after a marker made meanwhile.
	secret, configMap := second.waitRecords("Secret", ns, "db", 1), second.waitRecords("ConfigMap", ns, "app", 1)
	got := append(secret, configMap...)
	if len(got) != 2 {
		t.Fatalf("want one record for each labelled object, got %+v", got)
	}
	for _, c := range got {
		if c.Changed != "metadata.labels" {
			t.Errorf("%s %s: changed %q, want only the label: %+v", c.Kind, c.Name, c.Changed, c.Changes)
		}
	}
}

// TestRestoredObjectsGoThroughTheCurrentRules: a key added to
// diff.redact.keys between two runs with a state dir never shows its old
// value in the clear: the objects stored under the old rules are passed
// through the new ones as they are restored.
func TestRestoredObjectsGoThroughTheCurrentRules(t *testing.T) {
	ns := newNamespace(t)
	const before, after = "pin-canary-4321", "pin-canary-9876"
	kubectl(t, "", "-n", ns, "create", "configmap", "app", "--from-literal=pin_code="+before)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	stopWith(t, startBinary(t, "watch", "-n", ns, "--state-dir", state), syscall.SIGTERM)
	kubectl(t, "", "-n", ns, "patch", "configmap", "app", "--type", "merge", "-p", `{"data":{"pin_code":"`+after+`"}}`)
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("diff:\n  redact:\n    keys: ['*password*', '*pin*']\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	second := startBinary(t, "watch", "-n", ns, "--state-dir", state, "--config", cfg)
	got := untilMarker(t, second, ns, "marker")
	if len(got) != 1 || got[0].Changed != "data.pin_code" {
		t.Fatalf("want the one change while down, got %+v", got)
	}
	stopWith(t, second, syscall.SIGTERM)
	for _, leaked := range []string{before, after} {
		if strings.Contains(second.stdout.String(), leaked) {
			t.Errorf("%q, now redacted, appears in the record: %s", leaked, second.stdout.String())
		}
	}
}

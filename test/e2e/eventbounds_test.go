package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubediff/kubediff/pkg/record"
)

// TestOneEventDoesNotStopTheHistory: a core v1 Event with a 40 KiB reason
// and component (the API server bounds neither through core v1, and
// anyone who may create Events can write one) is shown with both cut to
// 128 bytes, and the history goes on: a change made after it is in
// `kubediff history`, and after a restart with the same state dir so is
// the next one (before, every write of the state dir failed with bbolt's
// "key too large", and again after each restart). An events.k8s.io Event
// in one namespace that names an object of another is not shown or kept
// as that namespace's.
func TestOneEventDoesNotStopTheHistory(t *testing.T) {
	ns, other := newNamespace(t), newNamespace(t)
	dir := filepath.Join(t.TempDir(), "state")
	watch := []string{"watch", "-n", ns, "-n", other, "--events", "all", "--state-dir", dir}
	w := startBinary(t, watch...)
	w.logOnFailure()
	cms := clients.CoreV1().ConfigMaps(ns)
	settings, err := cms.Create(bg, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"level": "one"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.waitRecords("ConfigMap", ns, "settings", 1)

	createHugeEvent(t, w, ns, settings)
	forgeEventAbout(t, ns, other)
	eventually(t, "the Event written after the forged one", func() bool { return eventShown(w, ns, "Seen") != nil })
	setLevel(t, w, ns, "two")

	// The history, read through the running kubediff's state dir, holds
	// the change made after the Event.
	historyHolds(t, dir, ns, "two")
	for _, line := range strings.Split(w.stdout.String(), "\n") {
		if len(line) > 8<<10 {
			t.Errorf("a stdout line of %d bytes: %.200s…", len(line), line)
		}
	}
	if out, _ := cliOutput(t, "history", "-n", other, "--events", "all", "--state-dir", dir); strings.Contains(out, "Forged") {
		t.Errorf("another namespace's history holds the forged Event:\n%s", out)
	}
	for _, c := range w.records() {
		if c.Event != nil && (c.Namespace != ns || strings.HasPrefix(c.Event.Reason, "Forged")) {
			t.Errorf("an Event shown as another namespace's: %+v %+v", c, c.Event)
		}
	}
	stopWith(t, w, syscall.SIGTERM)

	// Again, after a restart: the Event is in the state dir's cache and
	// history.
	w = startBinary(t, watch...)
	w.logOnFailure()
	setLevel(t, w, ns, "three")
	historyHolds(t, dir, ns, "three")
	stopWith(t, w, syscall.SIGTERM)
	historyHolds(t, dir, ns, "two")
}

// TestALongNameDoesNotStopTheHistory: a Role whose name is 40 KiB (RBAC
// validates names only as path segments, so the API server takes it, from
// anyone who may create Roles in the namespace) is reported, and the
// state dir goes on: a change after it is in the history, and after a
// restart the Role is not reported again and the next change is kept too
// (before, its key failed every write of the state dir).
func TestALongNameDoesNotStopTheHistory(t *testing.T) {
	ns := newNamespace(t)
	dir := filepath.Join(t.TempDir(), "state")
	watch := []string{"watch", "-n", ns, "--state-dir", dir}
	w := startBinary(t, watch...)
	w.logOnFailure()
	if _, err := clients.CoreV1().ConfigMaps(ns).Create(bg, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"level": "one"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("r", 40<<10)
	if _, err := clients.RbacV1().Roles(ns).Create(bg, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: long}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitRecords("Role", ns, long, 1)
	setLevel(t, w, ns, "two")
	historyHolds(t, dir, ns, "two")
	stopWith(t, w, syscall.SIGTERM)

	w = startBinary(t, watch...)
	w.logOnFailure()
	setLevel(t, w, ns, "three")
	historyHolds(t, dir, ns, "three")
	if got := w.recordsFor("Role", ns, long); len(got) != 0 {
		t.Errorf("after the restart the Role is reported again: %d records, the first %s", len(got), got[0].Type)
	}
	stopWith(t, w, syscall.SIGTERM)
}

// createHugeEvent writes, through core v1, a Warning about the ConfigMap
// whose reason and source.component are 40 KiB, and checks the record
// kubediff shows of it bounds both.
func createHugeEvent(t *testing.T, w *run, ns string, about *corev1.ConfigMap) {
	t.Helper()
	huge := strings.Repeat("R", 40<<10)
	now := metav1.NewTime(time.Now())
	event := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "settings.huge", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: about.Name, UID: about.UID},
		Reason:         huge, Message: "a reason of 40 KiB", Type: corev1.EventTypeWarning, Count: 1,
		Source: corev1.EventSource{Component: huge}, FirstTimestamp: now, LastTimestamp: now}
	if _, err := clients.CoreV1().Events(ns).Create(bg, event, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var e *record.Event
	eventually(t, "the Event of 40 KiB", func() bool { e = eventShown(w, ns, "RRRR"); return e != nil })
	if len(e.Reason) > 200 || len(e.ReportingController) > 200 || !strings.HasSuffix(e.Reason, "…") {
		t.Errorf("the Event shown with a reason of %d bytes (%.20q…), a component of %d", len(e.Reason), e.Reason, len(e.ReportingController))
	}
}

// eventShown is the Event the run showed about ConfigMap ns/settings
// whose reason starts with reason (nil: none yet).
func eventShown(w *run, ns, reason string) *record.Event {
	for _, c := range w.recordsFor("ConfigMap", ns, "settings") {
		if c.Type == record.EventRecord && c.Event != nil && strings.HasPrefix(c.Event.Reason, reason) {
			return c.Event
		}
	}
	return nil
}

// forgeEventAbout writes, through events.k8s.io, an Event in ns that
// names a ConfigMap of other (the API server lets it), then an ordinary
// one in ns: once kubediff shows the second, it has read the first.
func forgeEventAbout(t *testing.T, ns, other string) {
	t.Helper()
	target, err := clients.CoreV1().ConfigMaps(other).Create(bg, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "target"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []struct {
		name, reason, namespace, object string
		uid                             types.UID
	}{{"forged", "Forged", other, "target", target.UID}, {"seen", "Seen", ns, "settings", ""}} {
		event := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: e.name, Namespace: ns}, EventTime: metav1.NewMicroTime(time.Now()),
			Regarding: corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: e.namespace, Name: e.object, UID: e.uid},
			Reason:    e.reason, Type: corev1.EventTypeWarning, Action: "Test", Note: "written by the e2e test",
			ReportingController: "example.com/e2e", ReportingInstance: "e2e-1"}
		if _, err := clients.EventsV1().Events(ns).Create(bg, event, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// setLevel changes the ConfigMap settings and waits for the run to show
// it.
func setLevel(t *testing.T, w *run, ns, level string) {
	t.Helper()
	p := fmt.Sprintf(`{"data":{"level":%q}}`, level)
	if _, err := clients.CoreV1().ConfigMaps(ns).Patch(bg, "settings", types.MergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the ConfigMap's change to "+level, func() bool {
		for _, c := range w.recordsFor("ConfigMap", ns, "settings") {
			if c.Type == record.Updated && strings.Contains(fmt.Sprint(changesOf(c)), level) {
				return true
			}
		}
		return false
	})
}

// historyHolds waits until `kubediff history` of the state dir lists the
// ConfigMap's change to level.
func historyHolds(t *testing.T, dir, ns, level string) {
	t.Helper()
	var out string
	defer func() {
		if t.Failed() {
			t.Logf("history of the state dir:\n%s", out)
		}
	}()
	eventually(t, "the change to "+level+" in the history", func() bool {
		out, _ = cliOutput(t, "history", "cm/settings", "-n", ns, "--since", "30m", "--state-dir", dir)
		return strings.Contains(out, `"to":"`+level+`"`)
	})
}

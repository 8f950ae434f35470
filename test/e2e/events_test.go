package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubediff/kubediff/pkg/record"
)

// TestEventAboutASecretKeepsNoMessage: an Event about a Secret whose note
// quotes a value (as a careless controller's might) reaches the stream
// as a record of type event naming the Secret, its message withheld, and
// the value is nowhere in the state dir (the cached Event object, the
// history) nor in the output. The Event is written through
// events.k8s.io/v1 as a controller writes it; no controller runs here.
func TestEventAboutASecretKeepsNoMessage(t *testing.T) {
	ns := newNamespace(t)
	dir := filepath.Join(t.TempDir(), "state")
	w := startWatch(t, "-n", ns, "--events", "all", "--state-dir", dir)
	w.logOnFailure()
	secret, err := clients.CoreV1().Secrets(ns).Create(bg, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		StringData: map[string]string{"password": "hunter2-e2e"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewMicroTime(time.Now())
	event := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "db.leak", Namespace: ns}, EventTime: now,
		Regarding: corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: ns, Name: "db", UID: secret.UID},
		Reason:    "Rotated", Type: "Warning", Action: "Rotate", Note: "rotated password to hunter2-e2e",
		ReportingController: "example.com/rotator", ReportingInstance: "rotator-1"}
	if _, err := clients.EventsV1().Events(ns).Create(bg, event, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got record.Change
	eventually(t, "the Event's record", func() bool {
		for _, c := range w.recordsFor("Secret", ns, "db") {
			if c.Type == record.EventRecord {
				got = c
				return true
			}
		}
		return false
	})
	if got.Event == nil || got.Event.Reason != "Rotated" || got.Event.ReportingController != "example.com/rotator" || got.UID != string(secret.UID) ||
		got.Event.Message != "(message withheld: an Event about a Secret)" {
		t.Errorf("the Event's record: %+v %+v", got, got.Event)
	}
	w.shutdown() // the state dir is written whole
	if bytes.Contains([]byte(w.stdout.String()+w.stderr.String()), []byte("hunter2-e2e")) {
		t.Error("the Secret's value is in kubediff's output")
	}
	err = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		raw, err := os.ReadFile(path)
		if err == nil && bytes.Contains(raw, []byte("hunter2-e2e")) {
			t.Errorf("%s holds the Secret's value", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

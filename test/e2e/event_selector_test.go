package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubediff/kubediff/pkg/record"
)

// TestLabelSelectorKeepsEventsAboutSelectedObjects: with a label selector
// (for every type, then per type in the config file), or a field
// selector on the object's name (an Event's name is not its object's),
// and Events on, a
// Warning Event about an object the selector picks shows as a record of
// type event naming that object, and one about an object it leaves out
// shows nothing. Events carry no labels: before, the selector hid every
// one. The Events are written through events.k8s.io/v1 as a controller
// writes them; no controller runs here.
func TestLabelSelectorKeepsEventsAboutSelectedObjects(t *testing.T) {
	perType := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(perType, []byte("selectors:\n- resources: [configmaps]\n  labelSelector: app=web\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{"global": {"-l", "app=web"}, "per type": {"--config", perType},
		"field selector": {"--field-selector", "metadata.name=web"}} {
		t.Run(name, func(t *testing.T) {
			ns := newNamespace(t)
			w := startWatch(t, append([]string{"-n", ns, "--events", "warnings"}, args...)...)
			w.logOnFailure()
			web := createLabelled(t, ns, "web", "web")
			other := createLabelled(t, ns, "other", "db")
			w.waitRecords("ConfigMap", ns, "web", 1)
			warn(t, ns, other, "Unselected")
			warn(t, ns, web, "Selected")
			warn(t, ns, web, "Marker") // after the others on the same watch
			eventually(t, "the marker Event's record", func() bool {
				return slices.ContainsFunc(w.recordsFor("ConfigMap", ns, "web"), func(c record.Change) bool {
					return c.Event != nil && c.Event.Reason == "Marker"
				})
			})
			got := w.recordsFor("ConfigMap", ns, "web")
			if !slices.ContainsFunc(got, func(c record.Change) bool {
				return c.Type == record.EventRecord && c.Event.Reason == "Selected" && c.UID == string(web.UID) && c.Labels["app"] == "web"
			}) {
				t.Errorf("no event record about the selected ConfigMap; its records: %s", describeRecords(got))
			}
			for _, c := range w.records() {
				if c.Name == "other" || c.Kind == "Event" {
					t.Errorf("a record of what the selector leaves out: %s %s %s/%s %+v", c.Type, c.Kind, c.Namespace, c.Name, c.Event)
				}
			}
		})
	}
}

// createLabelled creates a ConfigMap labelled app=app.
func createLabelled(t *testing.T, ns, name, app string) *corev1.ConfigMap {
	t.Helper()
	cm, err := clients.CoreV1().ConfigMaps(ns).Create(bg, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{"app": app}}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// warn writes a Warning Event of reason about cm.
func warn(t *testing.T, ns string, cm *corev1.ConfigMap, reason string) {
	t.Helper()
	event := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: strings.ToLower(cm.Name + "." + reason), Namespace: ns},
		EventTime: metav1.NewMicroTime(time.Now()),
		Regarding: corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: cm.Name, UID: cm.UID},
		Reason:    reason, Type: "Warning", Action: "Check", Note: "something is off with " + cm.Name,
		ReportingController: "example.com/checker", ReportingInstance: "checker-1"}
	if _, err := clients.EventsV1().Events(ns).Create(bg, event, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

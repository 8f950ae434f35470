package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestObjectPageShowsItsChangesFirst: in headless Chromium, an object's
// page of `kubediff ui --state-dir` lists the object's changes before
// who last changed each line, and the Events the filter chooses: with
// the default (warnings) its Warning and none of its many Normal Events,
// with events=all both.
func TestObjectPageShowsItsChangesFirst(t *testing.T) {
	ns, dir := newNamespace(t), filepath.Join(t.TempDir(), "state")
	w := startBinary(t, "watch", "-n", ns, "--state-dir", dir)
	w.logOnFailure()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"level": "one"}}
	cm, err := clients.CoreV1().ConfigMaps(ns).Create(bg, cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := clients.CoreV1().ConfigMaps(ns).Patch(bg, "settings", types.MergePatchType, []byte(`{"data":{"level":"two"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		createEventAbout(t, ns, cm, fmt.Sprintf("Probed%d", i), corev1.EventTypeNormal)
	}
	createEventAbout(t, ns, cm, "Broken", corev1.EventTypeWarning)
	eventually(t, "the history to hold the changes and the Events", func() bool {
		out, _ := cliOutput(t, "history", "configmaps/settings", "-n", ns, "--state-dir", dir, "--events", "all", "-o", "json")
		return strings.Count(out, `"type":"Normal"`) == 6 && strings.Contains(out, `"reason":"Broken"`) && strings.Contains(out, `"type":"updated"`)
	})

	browser := newBrowser(t)
	page := startUI(t, "--state-dir", dir)
	inBrowser(t, browser, "timeline", chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(".legend")))
	base := strings.TrimSuffix(page, regexp.MustCompile(`/open\?.*$`).FindString(page))
	object := base + "/?object=configmaps/settings&namespace=" + ns

	inBrowser(t, browser, "object page", chromedp.Navigate(object), chromedp.WaitVisible(chromedp.CSS(".record")))
	text := mainText(t, browser)
	if !strings.Contains(text, "warning Broken") || strings.Contains(text, "normal Probed") {
		t.Errorf("with the default filter (warnings) the object's page lists:\n%s", text)
	}
	changesFirst := browserValue(t, browser, "the sections' order", chromedp.Evaluate[bool](
		`!!(document.getElementById("records").compareDocumentPosition(document.getElementById("blame")) & Node.DOCUMENT_POSITION_FOLLOWING)`))
	if !changesFirst || strings.Index(text, "updated") > strings.Index(text, "Who last changed each line") {
		t.Errorf("the object's changes do not come before its blame:\n%s", text)
	}
	screenshot(t, browser, "object-changes-first")

	inBrowser(t, browser, "object page, every Event", chromedp.Navigate(object+"&events=all"), chromedp.WaitVisible(chromedp.CSS(".record")))
	if text = mainText(t, browser); strings.Count(text, "normal Probed") != 6 || !strings.Contains(text, "warning Broken") {
		t.Errorf("with events=all the object's page lists:\n%s", text)
	}
}

// createEventAbout writes, through core v1, an Event of type typ and
// reason about the ConfigMap.
func createEventAbout(t *testing.T, ns string, about *corev1.ConfigMap, reason, typ string) {
	t.Helper()
	now := metav1.NewTime(time.Now())
	event := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: about.Name + "." + strings.ToLower(reason), Namespace: ns},
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: about.Name, UID: about.UID},
		Reason:         reason, Message: reason + " said", Type: typ, Count: 1,
		Source: corev1.EventSource{Component: "probe"}, FirstTimestamp: now, LastTimestamp: now}
	if _, err := clients.CoreV1().Events(ns).Create(bg, event, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubediff/kubediff/pkg/record"
)

// forgedRecord is a release record of release web at revision, as
// Helm's ConfigMap driver encodes one (gzipped JSON, base64), naming a
// chart Helm never installed.
func forgedRecord(t *testing.T, revision int) (map[string]string, string) {
	t.Helper()
	var zipped bytes.Buffer
	z := gzip.NewWriter(&zipped)
	fmt.Fprintf(z, `{"name":"web","version":%d,"chart":{"metadata":{"name":"forged","version":"6.6.6","appVersion":"6.6"}}}`, revision)
	z.Close()
	labels := map[string]string{"owner": "helm", "name": "web", "version": fmt.Sprint(revision), "status": "deployed"}
	return labels, base64.StdEncoding.EncodeToString(zipped.Bytes())
}

// TestForgedHelmRecordNamesNothing: in a release's namespace, someone
// who may create ConfigMaps and Secrets writes release records Helm
// never wrote: ConfigMaps labelled as revisions 1 and 2 of the release
// (Helm here keeps its records in Secrets, the default) and an Opaque
// Secret labelled as revision 3. A later write to the release's
// Deployment still names revision 1 and its chart, and, the Opaque
// Secret deleted (Helm itself cannot upgrade past it), the upgrade to
// the real revision 2 names that revision's chart: nothing forged is
// named.
func TestForgedHelmRecordNamesNothing(t *testing.T) {
	ns := newNamespace(t)
	w := startWatch(t, "-n", ns, "--show-helm-storage") // the forged records' own records say the Book has seen them
	w.logOnFailure()
	chart := writeChart(t, t.TempDir(), "1.4.1")
	helmIn(t, ns, "install", "web", chart)
	w.waitRecords("Deployment", ns, "web", 1)

	ctx := context.Background()
	for revision := 1; revision <= 2; revision++ {
		labels, release := forgedRecord(t, revision)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("sh.helm.release.v1.web.v%d", revision), Labels: labels},
			Data: map[string]string{"release": release}}
		if _, err := clients.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		w.waitRecords("ConfigMap", ns, cm.Name, 1)
	}
	labels, release := forgedRecord(t, 3)
	opaque := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.web.v3", Labels: labels},
		Data: map[string][]byte{"release": []byte(release)}}
	if _, err := clients.CoreV1().Secrets(ns).Create(ctx, opaque, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitRecords("Secret", ns, opaque.Name, 1)

	before := len(w.recordsFor("Deployment", ns, "web"))
	kubectl(t, "", "annotate", "deployment", "web", "-n", ns, "probe=after-the-forgery")
	annotated := w.waitRecords("Deployment", ns, "web", before+1)[before:]
	for _, c := range annotated {
		if r := c.Release; r == nil || r.Name != "web" || r.Revision != 1 || r.Chart != "web-1.4.1" {
			t.Errorf("a write after the forged records names %v, want web rev 1, chart web-1.4.1", r)
		}
	}

	// Helm's secrets driver reads every Secret labelled as the release's
	// record, whatever its type (the forged one makes `helm upgrade`
	// crash); the ConfigMaps stay.
	if err := clients.CoreV1().Secrets(ns).Delete(ctx, opaque.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitRecords("Secret", ns, opaque.Name, 2)
	writeChart(t, chart, "1.4.2")
	helmIn(t, ns, "upgrade", "web", chart, "--set", "replicas=2")
	var upgraded []record.Change
	eventually(t, "the upgrade's record of the Deployment", func() bool {
		upgraded = nil
		for _, c := range w.recordsFor("Deployment", ns, "web")[before+len(annotated):] {
			if c.Manager != nil && c.Manager.Name == "helm" {
				upgraded = append(upgraded, c)
			}
		}
		return len(upgraded) > 0
	})
	for _, c := range upgraded {
		if r := c.Release; r == nil || r.Revision != 2 || r.Chart != "web-1.4.2" {
			t.Errorf("the upgrade's Deployment record names %v, want web rev 2, chart web-1.4.2", r)
		}
	}
}

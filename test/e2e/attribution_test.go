package e2e

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubediff/kubediff/pkg/record"
)

// TestScaleToZeroNamesNoOne: `kubectl scale --replicas=0` leaves no
// managedFields entry owning the zero (the Scale's spec.replicas is
// omitempty, so the zero is in no field set and the scale entry goes),
// and moves no entry's time. The record names no one, in JSON (no
// `manager`) and in text (`by ?`), rather than the newest other entry,
// `kubectl set image`'s. The scales after it name no one either: with no
// entry owning spec.replicas, the Scale the API server builds has no
// managedFields, and an update of an object without them is not tracked
// (the field manager's skipNonAppliedManager), so no entry comes back.
// Before the zero, scales name kubectl on the scale subresource, the
// first (its entry new) and the next (its entry owning spec.replicas).
func TestScaleToZeroNamesNoOne(t *testing.T) {
	ns := newNamespace(t)
	kubectl(t, tenEnvDeployment, "-n", ns, "apply", "-f", "-")
	w := startWatch(t, "-n", ns)
	w.logOnFailure()
	text := startWatch(t, "-n", ns, "-o", "text", "--color", "never")
	text.logOnFailure()

	scale := &record.Manager{Name: "kubectl", Subresource: "scale"}
	steps := []struct {
		args    []string
		changed string
		want    *record.Manager // nil: no one
	}{
		{[]string{"scale", "deployment/web", "--replicas=2"}, "spec.replicas", scale},
		{[]string{"scale", "deployment/web", "--replicas=3"}, "spec.replicas", scale},
		// In a later second than the apply, so that kubectl-set's entry
		// is the newest, the one the old fallback named.
		{[]string{"set", "image", "deployment/web", "web=nginx:1.28"}, "spec.template.spec.containers[name=web].image", &record.Manager{Name: "kubectl-set"}},
		{[]string{"scale", "deployment/web", "--replicas=0"}, "spec.replicas", nil},
		{[]string{"scale", "deployment/web", "--replicas=2"}, "spec.replicas", nil},
		{[]string{"scale", "deployment/web", "--replicas=3"}, "spec.replicas", nil},
	}
	applied := time.Now()
	eventually(t, "the next second", func() bool { return time.Now().Unix() > applied.Unix() })
	for i, s := range steps {
		kubectl(t, "", append([]string{"-n", ns}, s.args...)...)
		got := w.waitRecords("Deployment", ns, "web", i+1)[i]
		if got.Changed != s.changed {
			t.Fatalf("kubectl %s: changed %q, want %q", strings.Join(s.args, " "), got.Changed, s.changed)
		}
		if !sameManager(got.Manager, s.want) {
			t.Errorf("kubectl %s: manager %+v, want %+v", strings.Join(s.args, " "), got.Manager, s.want)
		}
		if s.want == nil {
			checkNoEntryOwnsReplicas(t, ns)
		}
	}

	heads := textHeads(t, text, "updated Deployment "+ns+"/web", len(steps))
	for i, s := range steps {
		by := " by ?"
		if s.want != nil {
			by = " by " + s.want.Name
		}
		if !strings.HasSuffix(heads[i], "updated Deployment "+ns+"/web"+by) {
			t.Errorf("kubectl %s: text %q, want it to end %q", strings.Join(s.args, " "), heads[i], "web"+by)
		}
	}
}

// sameManager compares a record's manager with the one a step expects,
// by name and subresource (the operation is always Update here, the time
// the server's).
func sameManager(got, want *record.Manager) bool {
	if got == nil || want == nil {
		return got == want
	}
	return got.Name == want.Name && got.Subresource == want.Subresource
}

// checkNoEntryOwnsReplicas fails the test unless the server's
// managedFields of Deployment ns/web own no spec.replicas: what makes a
// scale a write no entry can be named for.
func checkNoEntryOwnsReplicas(t *testing.T, ns string) {
	t.Helper()
	d, err := clients.AppsV1().Deployments(ns).Get(bg, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range d.ManagedFields {
		if e.FieldsV1 != nil && strings.Contains(e.FieldsV1.GetRawString(), `"f:replicas"`) {
			t.Fatalf("after the scale to zero, %s (%s) owns spec.replicas: %s", e.Manager, e.Subresource, e.FieldsV1.GetRawString())
		}
	}
}

// textHeads waits for n first lines of text records starting with head
// and returns them, oldest first.
func textHeads(t *testing.T, r *run, head string, n int) []string {
	t.Helper()
	var heads []string
	eventually(t, "the text records", func() bool {
		heads = heads[:0]
		for _, line := range strings.Split(r.stdout.String(), "\n") {
			if strings.Contains(line, " "+head) {
				heads = append(heads, line)
			}
		}
		return len(heads) >= n
	})
	return heads
}

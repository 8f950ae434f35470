package stdout

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/record"
)

func owned(typ, kind, name, ownerKind, ownerName string, changes ...record.FieldChange) record.Change {
	return record.Change{Time: at, Type: typ, Kind: kind, Namespace: "day", Name: name,
		Owner: &record.Owner{Kind: ownerKind, Name: ownerName}, Changes: changes}
}

func TestRolloutFoldsUnderItsDeployment(t *testing.T) {
	replicas := record.FieldChange{Op: record.OpReplace, Path: "/spec/replicas", Field: "spec.replicas", From: int64(10), To: int64(0)}
	image := record.Change{Time: at, Type: "updated", Kind: "Deployment", Namespace: "day", Name: "web", Manager: &record.Manager{Name: "kubectl-set"},
		Changes: []record.FieldChange{{Op: record.OpReplace, Path: "/spec/template/spec/containers/0/image", Field: "spec.template.spec.containers[name=nginx].image", From: "nginx:1.27", To: "nginx:1.28"}}}
	burst := []record.Change{owned("added", "ReplicaSet", "web-new", "Deployment", "web")}
	for i := range 10 {
		burst = append(burst, owned("added", "Pod", fmt.Sprintf("web-new-%d", i), "ReplicaSet", "web-new"))
	}
	burst = append(burst, owned("updated", "ReplicaSet", "web-old", "Deployment", "web", replicas))
	for i := range 10 {
		burst = append(burst, owned("deleted", "Pod", fmt.Sprintf("web-old-%d", i), "ReplicaSet", "web-old"))
	}
	var out bytes.Buffer
	sink := NewFoldingText(&out, false)
	ctx := context.Background()
	if err := sink.Notify(ctx, image); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"nginx:1.27" → "nginx:1.28"`) {
		t.Fatalf("the change a person made must print at once and in full:\n%s", out.String())
	}
	for _, c := range burst {
		if err := sink.Notify(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Count(out.String(), "\n") != 2 {
		t.Fatalf("the controllers' burst printed before it settled:\n%s", out.String())
	}
	// A lone owned record (a Pod restarting elsewhere) prints in full.
	restart := owned("updated", "Pod", "api-1", "ReplicaSet", "api-5d",
		record.FieldChange{Op: record.OpReplace, Path: "/status/containerStatuses/0/restartCount", Field: "status.containerStatuses[name=api].restartCount", From: int64(0), To: int64(1)})
	if err := sink.Notify(ctx, restart); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil { // what the queue does at the end
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("printed %d lines, want 5 (the change, one fold line, the restart):\n%s", len(lines), out.String())
	}
	want := "owned   Deployment day/web: ReplicaSet 1 added, 1 updated (spec.replicas); Pod 10 added, 10 deleted"
	if !strings.HasSuffix(lines[2], want) {
		t.Fatalf("fold line = %q, want it to end %q", lines[2], want)
	}
	if !strings.Contains(out.String(), "restartCount: 0 → 1") {
		t.Fatalf("a lone restart was folded:\n%s", out.String())
	}
}

// A rollout stalled on a quota: the Deployment's change, then one fold
// line saying how it ended, and its ReplicaSet's warning once under it
// however often the controller said it.
func TestWarningFoldsUnderItsOwnerOnce(t *testing.T) {
	var out bytes.Buffer
	sink := NewFoldingText(&out, false)
	sink.SetOutcome(func(kind, namespace, name string, _ time.Time) string {
		if kind != "Deployment" || namespace != "day" || name != "web" {
			t.Errorf("outcome asked of %s %s/%s", kind, namespace, name)
		}
		return ""
	})
	ctx := context.Background()
	added := record.Change{Time: at, Type: "added", Kind: "Deployment", Namespace: "day", Name: "web"}
	burst := []record.Change{owned("added", "ReplicaSet", "web-5d", "Deployment", "web"),
		owned("added", "Pod", "web-5d-1", "ReplicaSet", "web-5d"), owned("added", "Pod", "web-5d-2", "ReplicaSet", "web-5d")}
	for n := 1; n <= 3; n++ {
		e := owned(record.EventRecord, "ReplicaSet", "web-5d", "Deployment", "web")
		e.Event = &record.Event{Type: record.EventWarning, Reason: "FailedCreate", Count: n, ReportingController: "replicaset-controller",
			Message: `Error creating: pods "web-5d-3" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2`}
		burst = append(burst, e)
	}
	for _, c := range append([]record.Change{added}, burst...) {
		if err := sink.Notify(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("printed %d lines, want the change, the fold and one warning:\n%s", len(lines), out.String())
	}
	if want := "Pod 2 added; stalled: FailedCreate: Error creating: pods \"web-5d-3\" is forbidden: exceeded quota"; !strings.Contains(lines[1], want) {
		t.Errorf("fold line %q lacks %q", lines[1], want)
	}
	if want := "  warning ReplicaSet day/web-5d FailedCreate: Error creating:"; !strings.HasPrefix(lines[2], want) || !strings.Contains(lines[2], "(×3) by replicaset-controller") {
		t.Errorf("warning line %q, want it to start %q and count 3", lines[2], want)
	}
}

// A burst too small to fold prints its records in full once it settled:
// after lines of later moments, each says what it waited under; printed
// before any later line, none does.
func TestLateRecordsSayWhatTheyBelongTo(t *testing.T) {
	var out bytes.Buffer
	sink := NewFoldingText(&out, false)
	ctx := context.Background()
	pod := owned("updated", "Pod", "web-1", "ReplicaSet", "web-5d",
		record.FieldChange{Op: record.OpReplace, Path: "/spec/activeDeadlineSeconds", Field: "spec.activeDeadlineSeconds", From: int64(1), To: int64(2)})
	later := record.Change{Time: record.Timestamp(time.Time(at).Add(2 * time.Second)), Type: "added", Kind: "ConfigMap", Namespace: "day", Name: "settings"}
	for _, c := range []record.Change{pod, later} {
		if err := sink.Notify(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "ConfigMap day/settings") ||
		!strings.Contains(lines[1], "updated Pod day/web-1") || !strings.HasSuffix(lines[1], " (late: waited under ReplicaSet day/web-5d until it settled)") {
		t.Fatalf("a late record does not say what it belongs to:\n%s", out.String())
	}

	out.Reset()
	sink = NewFoldingText(&out, false)
	if err := sink.Notify(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "late") {
		t.Fatalf("a record printed before any later one says it is late:\n%s", out.String())
	}
}

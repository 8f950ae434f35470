package stdout

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

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

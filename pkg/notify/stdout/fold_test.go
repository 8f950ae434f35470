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
	batch := []record.Change{
		{Time: at, Type: "updated", Kind: "Deployment", Namespace: "day", Name: "web", Manager: &record.Manager{Name: "kubectl-set"},
			Changes: []record.FieldChange{{Op: record.OpReplace, Path: "/spec/template/spec/containers/0/image", Field: "spec.template.spec.containers[name=nginx].image", From: "nginx:1.27", To: "nginx:1.28"}}},
		owned("added", "ReplicaSet", "web-new", "Deployment", "web"),
	}
	for i := range 10 {
		batch = append(batch, owned("added", "Pod", fmt.Sprintf("web-new-%d", i), "ReplicaSet", "web-new"))
	}
	batch = append(batch, owned("updated", "ReplicaSet", "web-old", "Deployment", "web", replicas))
	for i := range 10 {
		batch = append(batch, owned("deleted", "Pod", fmt.Sprintf("web-old-%d", i), "ReplicaSet", "web-old"))
	}
	var out bytes.Buffer
	sink := NewFoldingText(&out, false)
	if err := sink.NotifyBatch(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("a rollout's 23 records print as %d lines, want 3:\n%s", len(lines), out.String())
	}
	want := "owned   Deployment day/web: ReplicaSet 1 added, 1 updated (spec.replicas); Pod 10 added, 10 deleted"
	if !strings.HasSuffix(lines[2], want) {
		t.Fatalf("fold line = %q, want it to end %q", lines[2], want)
	}
	if !strings.Contains(lines[1], `"nginx:1.27" → "nginx:1.28"`) {
		t.Fatalf("the change a person made must show in full:\n%s", out.String())
	}

	// A lone owned record (a Pod restarting) prints in full.
	out.Reset()
	restart := owned("updated", "Pod", "web-new-3", "ReplicaSet", "web-new",
		record.FieldChange{Op: record.OpReplace, Path: "/status/containerStatuses/0/restartCount", Field: "status.containerStatuses[name=nginx].restartCount", From: int64(0), To: int64(1)})
	if err := sink.Notify(context.Background(), restart); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "restartCount: 0 → 1") {
		t.Fatalf("a lone restart was folded:\n%s", out.String())
	}
}

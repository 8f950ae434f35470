package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kubediff/kubediff/pkg/record"
)

// A chat preset folds a rollout as the Slack sink does: the person's
// change posts at once and in full; the controllers' burst under the same
// Deployment posts as one counted line once it settles (here: at Close,
// as at shutdown), and a lone owned record in full.
func TestChatPresetFoldsARollout(t *testing.T) {
	rcv := &bodyReceiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	cfg := &Config{URL: srv.URL, Format: FormatMattermost, Fold: true}
	n, err := cfg.Build(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	folding, ok := n.(*FoldingChat)
	if !ok {
		t.Fatalf("a chat preset with fold built a %T", n)
	}
	owned := func(typ, kind, name, ownerKind, ownerName string) record.Change {
		return record.Change{ID: name + typ, Type: typ, APIVersion: "v1", Kind: kind, Namespace: "prod", Name: name, Owner: &record.Owner{Kind: ownerKind, Name: ownerName}}
	}
	records := []record.Change{{ID: "web", Type: record.Updated, APIVersion: "apps/v1", Kind: "Deployment", Namespace: "prod", Name: "web",
		Changes: []record.FieldChange{{Op: record.OpReplace, Path: "/spec/template/spec/containers/0/image", Field: "spec.template.spec.containers[0].image", From: "web:1", To: "web:2"}}},
		owned("added", "ReplicaSet", "web-new", "Deployment", "web"), owned("updated", "ReplicaSet", "web-old", "Deployment", "web")}
	for i := range 10 {
		records = append(records, owned("added", "Pod", fmt.Sprintf("web-new-%d", i), "ReplicaSet", "web-new"),
			owned("deleted", "Pod", fmt.Sprintf("web-old-%d", i), "ReplicaSet", "web-old"))
	}
	records = append(records, owned("updated", "Pod", "api-1", "ReplicaSet", "api-5d"))
	if err := folding.NotifyBatch(context.Background(), records); err != nil {
		t.Fatal(err)
	}
	if len(rcv.bodies) != 1 || !strings.Contains(rcv.bodies[0], "web:2") {
		t.Fatalf("want the Deployment's change posted at once, alone; got %q", rcv.bodies)
	}
	if err := folding.Close(); err != nil {
		t.Fatal(err)
	}
	if len(rcv.bodies) != 2 {
		t.Fatalf("want the settled bursts in one more message, got %d", len(rcv.bodies))
	}
	var msg struct{ Text string }
	if err := json.Unmarshal([]byte(rcv.bodies[1]), &msg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg.Text, "owned Deployment prod/web") || !strings.Contains(msg.Text, "ReplicaSet 1 added, 1 updated; Pod 10 added, 10 deleted") ||
		!strings.Contains(msg.Text, "updated Pod prod/api") || strings.Contains(msg.Text, "web-new-3") {
		t.Fatalf("want one folded line for the rollout and the lone Pod update in full:\n%s", msg.Text)
	}
}

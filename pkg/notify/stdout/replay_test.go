package stdout

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/record"
)

// Kept records replayed as text (kubediff history -o text) fold as watch
// folded them when they came, by their own times: a rollout's Pods are
// one owned line, printed before the record that came after they
// settled, not 25 Pod lines.
func TestReplayFoldsByTheRecordsOwnTimes(t *testing.T) {
	var out bytes.Buffer
	sink := NewReplayText(&out, false)
	at := time.Date(2026, 11, 23, 7, 0, 0, 0, time.UTC)
	for i := range 25 {
		pod := record.Change{Type: record.Added, Kind: "Pod", Namespace: "shop", Name: "web-1-" + string(rune('a'+i)),
			Time: record.Timestamp(at.Add(time.Duration(i) * 100 * time.Millisecond)), Owner: &record.Owner{Kind: "ReplicaSet", Name: "web-1"}}
		if err := sink.Notify(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
	}
	later := record.Change{Type: record.Updated, Kind: "ConfigMap", Namespace: "shop", Name: "settings", Time: record.Timestamp(at.Add(time.Minute)),
		Changes: []record.FieldChange{{Op: record.OpReplace, Path: "/data/level", Field: "data.level", From: "1", To: "2"}}}
	if err := sink.Notify(context.Background(), later); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "owned") || !strings.Contains(lines[0], "Pod 25 added") || !strings.Contains(lines[1], "ConfigMap shop/settings") {
		t.Errorf("replayed as:\n%s\nwant one owned line for the 25 Pods, then the ConfigMap's record", out.String())
	}
}

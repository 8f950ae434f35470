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

// A replayed fold prints where its first step happened, saying its span,
// so the text reads in time order: a record made while the rollout ran
// comes after the rollout's line, not before it. A scale-down's last Pod,
// deleted 13 s after the rest, says it belongs to their fold instead of
// printing alone.
func TestReplayPrintsFoldsInTimeOrderAndJoinsLateSteps(t *testing.T) {
	var out bytes.Buffer
	sink := NewReplayText(&out, false)
	at := time.Date(2026, 11, 23, 7, 0, 0, 0, time.UTC)
	pod := func(typ, name string, after time.Duration) record.Change {
		return record.Change{Type: typ, Kind: "Pod", Namespace: "shop", Name: name, Time: record.Timestamp(at.Add(after)),
			Owner: &record.Owner{Kind: "ReplicaSet", Name: "web-1"}}
	}
	settings := func(after time.Duration) record.Change {
		return record.Change{Type: record.Updated, Kind: "ConfigMap", Namespace: "shop", Name: "settings", Time: record.Timestamp(at.Add(after)),
			Changes: []record.FieldChange{{Op: record.OpReplace, Path: "/data/level", Field: "data.level", From: "1", To: "2"}}}
	}
	changes := []record.Change{pod(record.Deleted, "a", 0), pod(record.Deleted, "b", time.Second), settings(1500 * time.Millisecond),
		pod(record.Deleted, "c", 2*time.Second), pod(record.Deleted, "d", 15*time.Second), settings(time.Minute)}
	for _, c := range changes {
		if err := sink.Notify(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"2026-11-23T07:00:00.000Z owned   ReplicaSet shop/web-1: Pod 3 deleted (until 2026-11-23T07:00:02.000Z, 2s)",
		"2026-11-23T07:00:01.500Z updated ConfigMap shop/settings by ?",
		"  ~ data.level: \"1\" → \"2\"",
		"2026-11-23T07:00:15.000Z owned   ReplicaSet shop/web-1: Pod 1 deleted (late steps of the fold at 2026-11-23T07:00:00.000Z)",
		"2026-11-23T07:01:00.000Z updated ConfigMap shop/settings by ?",
		"  ~ data.level: \"1\" → \"2\"",
	}
	if got := strings.Split(strings.TrimSpace(out.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("replayed as:\n%s\nwant:\n%s", out.String(), strings.Join(want, "\n"))
	}
}

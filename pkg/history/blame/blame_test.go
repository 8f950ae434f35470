package blame

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/record"
)

var t0 = time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC)

// step is a kept step minute minutes after t0: a record by user (with
// manager kubectl) of type typ, or a quiet state when typ is "".
func step(t *testing.T, minute int, typ, user string, state map[string]any) history.Step {
	t.Helper()
	s := history.Step{Time: t0.Add(time.Duration(minute) * time.Minute)}
	if state != nil {
		s.State, _ = json.Marshal(state)
	}
	if typ != "" {
		c := record.Change{Type: typ, ID: "uid/" + string(rune('0'+minute)) + "/" + typ, Manager: &record.Manager{Name: "kubectl"}}
		if user != "" {
			c.User = &record.User{Name: user}
		}
		s.Record, _ = json.Marshal(c)
	}
	return s
}

func configMap(data map[string]any, containers ...string) map[string]any {
	obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "settings"}, "data": data}
	if len(containers) > 0 {
		var list []any
		for _, c := range containers {
			name, image, _ := strings.Cut(c, "=")
			list = append(list, map[string]any{"name": name, "image": image})
		}
		obj["spec"] = map[string]any{"containers": list}
	}
	return obj
}

// lineOf finds the blamed line whose text has s.
func lineOf(t *testing.T, b Blame, s string) Line {
	t.Helper()
	for _, l := range b.Lines {
		if strings.Contains(l.Text, s) {
			return l
		}
	}
	t.Fatalf("no line with %q in %+v", s, b.Lines)
	return Line{}
}

func TestEachLineToTheChangeThatMadeIt(t *testing.T) {
	v1 := configMap(map[string]any{"a": "1", "b": "1", "c": "multi\nline\n"}, "web=nginx:1", "side=envoy:1")
	v2 := configMap(map[string]any{"a": "2", "b": "1", "c": "multi\nline\n"}, "web=nginx:1", "side=envoy:1")
	v3 := configMap(map[string]any{"a": "2", "b": "1", "c": "multi\nline\n"}, "first=busybox:1", "web=nginx:1", "side=envoy:1")
	v3["status"] = map[string]any{"replicas": 2}
	v4 := configMap(map[string]any{"a": "2", "b": "3", "c": "multi\nline\n"}, "first=busybox:1", "web=nginx:2", "side=envoy:1")
	v4["status"] = map[string]any{"replicas": 2}
	state, _ := json.Marshal(v4)
	steps := history.Steps{Complete: true, Begin: t0, Steps: []history.Step{
		step(t, 4, record.Updated, "alice", v4), step(t, 3, "", "", v3), step(t, 2, record.Updated, "bob", v2), step(t, 1, record.Added, "alice", v1),
	}}
	b, err := Of(state, steps, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		text, origin, user string
		minute             int
	}{
		{"a: \"2\"", Record, "bob", 2},
		{"b: \"3\"", Record, "alice", 4},
		{"name: settings", Record, "alice", 1},
		{"line", Record, "alice", 1}, // inside the multi-line string
		{"image: busybox:1", Quiet, "", 3},
		{"image: nginx:2", Record, "alice", 4},
		{"image: envoy:1", Record, "alice", 1}, // moved down a place, not changed
		{"replicas: 2", Quiet, "", 3},
	} {
		l := lineOf(t, b, tc.text)
		if l.Origin != tc.origin || l.User != tc.user || !l.Time.Equal(t0.Add(time.Duration(tc.minute)*time.Minute)) {
			t.Errorf("%q blamed on %+v, want %s by %q at minute %d", tc.text, l, tc.origin, tc.user, tc.minute)
		}
	}
	if l := lineOf(t, b, "image: envoy:1"); l.Field != "spec.containers[name=side].image" {
		t.Errorf("field of the sidecar's image: %q", l.Field)
	}
	if b.Walked != 4 {
		t.Errorf("walked %d steps, want 4", b.Walked)
	}
}

func TestLinesOlderThanTheHistorySaySo(t *testing.T) {
	v0 := configMap(map[string]any{"a": "1", "b": "1"})
	v1 := configMap(map[string]any{"a": "2", "b": "1"})
	before, _ := json.Marshal(v0)
	state, _ := json.Marshal(v1)
	steps := history.Steps{Complete: true, Begin: t0, Before: before, Steps: []history.Step{step(t, 1, record.Updated, "", v1)}}
	b, err := Of(state, steps, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l := lineOf(t, b, "b: \"1\""); l.Origin != BeforeHistory {
		t.Errorf("an unchanged line: %+v", l)
	}
	if l := lineOf(t, b, "a: \"2\""); l.Origin != Record || l.By != "kubectl" || l.User != "" {
		t.Errorf("a change no identity source named: %+v, want the manager alone", l)
	}
	var text strings.Builder
	if err := b.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "older than the history (begins 2026-11-23T14:00:00Z)") || !strings.Contains(text.String(), "uid/1 ") || strings.Contains(text.String(), "uid/1/updated") {
		t.Errorf("text:\n%s", text.String())
	}

	// The walk stopped at its bound: what it did not reach says so.
	steps.Complete = false
	if b, err = Of(state, steps, nil); err != nil {
		t.Fatal(err)
	}
	if l := lineOf(t, b, "b: \"1\""); l.Origin != Unwalked {
		t.Errorf("a line beyond the walk: %+v", l)
	}
	if l := lineOf(t, b, "a: \"2\""); l.Origin != Unwalked {
		t.Errorf("the oldest step read has nothing to compare with: %+v", l)
	}
}

func TestARecreatedObjectStartsAtItsCreation(t *testing.T) {
	v1 := configMap(map[string]any{"a": "1"})
	v2 := configMap(map[string]any{"a": "1"})
	state, _ := json.Marshal(v2)
	steps := history.Steps{Complete: true, Steps: []history.Step{
		step(t, 3, record.Added, "bob", v2), step(t, 2, record.Deleted, "alice", nil), step(t, 1, record.Added, "alice", v1),
	}}
	b, err := Of(state, steps, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l := lineOf(t, b, "a: \"1\""); l.User != "bob" || l.Type != record.Added {
		t.Errorf("a line of the object created again: %+v", l)
	}
	if b.Walked != 1 {
		t.Errorf("walked %d steps, want 1 (every line explained by the newest)", b.Walked)
	}
}

// The text gutter is narrow, as git blame's: a short id (the uid's first
// 8 characters and the resourceVersion), the time, who (cut at 28), so
// that a line of YAML fits 100 columns (it took 128 with full ids).
func TestTextFitsATerminal(t *testing.T) {
	b := Blame{Lines: []Line{{Origin: Record, Record: "5b1c1e9e-1f7a-4a43-9c55-1f0b8f3b1a01/1234567/updated",
		Time: time.Date(2026, 11, 23, 14, 1, 30, 123e6, time.UTC), By: "system:serviceaccount:argocd:argocd-application-controller (argocd-controller)",
		Text: "  replicas: 3"}}}
	var out strings.Builder
	if err := b.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	gutter, _, _ := strings.Cut(out.String(), "│")
	if n := len([]rune(gutter)); n > 72 || !strings.HasPrefix(gutter, "5b1c1e9e/1234567 ") {
		t.Errorf("gutter of %d columns, want at most 72 starting with the short id:\n%s", n, out.String())
	}
}

package stdout

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kubediff/kubediff/pkg/record"
)

// hostile is what a cluster can put in a name, a key or a value: clear
// the screen (ESC[2J), set the reader's clipboard (OSC 52 ended by BEL),
// return to the line's start to overwrite it (\r), ring the bell, DEL,
// an 8-bit CSI (U+009B, a C1 control some terminals obey in UTF-8), a
// raw CSI byte that is not UTF-8, and a right-to-left override.
const hostile = "\x1b[2J\x1b]52;c;cGF5bG9hZA==\x07\r\a\x7f\u009b31m\x9b\u202e"

// hostileRecords are records whose every string from the cluster carries
// hostile, covering each way text output shows a record: header, user, manager,
// each kind of field change, changed lines, a unified diff, a condition.
func hostileRecords() []record.Change {
	recs := []record.Change{
		{Time: at, Type: record.Added, APIVersion: "v1", Kind: "ConfigMap", Namespace: "prod", Name: "settings"},
		{Time: at, Type: record.Updated, APIVersion: "v1", Kind: "ConfigMap", Namespace: "prod", Name: "settings",
			Manager: &record.Manager{Name: "kubectl-edit"},
			User:    &record.User{Name: "alice", Groups: []string{"dev"}, ServiceAccount: &record.ServiceAccount{Namespace: "ns", Name: "sa"}, UserAgent: "kubectl/v1.31", SourceIP: "10.0.0.1"},
			Changes: []record.FieldChange{
				{Op: record.OpReplace, Path: "/spec/items/0/v", Field: `spec.items[key=x].v`, From: "a", To: "b"},
				{Op: record.OpAdd, Path: "/data/k", Field: "data.k", To: map[string]any{"key": "value"}},
				{Op: record.OpRemove, Path: "/data/j", Field: "data.j", From: []any{"x"}},
				{Op: record.OpReplace, Path: "/data/conf", Field: `data["conf"]`, From: "a\nb\n", To: "a\nc\n",
					Lines: &record.LineDiff{FromLines: 2, ToLines: 2, Hunks: []record.Hunk{{FromLine: 1, FromCount: 2, ToLine: 1, ToCount: 2,
						Lines: []string{"  a", "- b", "+ c"}}}}},
				{Op: record.OpReplace, Path: "/status/conditions/0/status", Field: "status.conditions[type=Ready].status", From: "False", To: "True"},
				{Op: record.OpReplace, Path: "/status/conditions/0/reason", Field: "status.conditions[type=Ready].reason", From: "Old", To: "New"},
			}},
		{Time: at, Type: record.Updated, APIVersion: "v1", Kind: "ConfigMap", Namespace: "prod", Name: "settings",
			Changes: []record.FieldChange{{Op: record.OpReplace, Path: "/data/mode", Field: "data.mode", From: "fast", To: "safe"}},
			Unified: "--- ConfigMap prod/settings (old)\n+++ ConfigMap prod/settings (new)\n@@ -1,2 +1,2 @@\n data:\n-  mode: fast" + hostile + "\n+  mode: safe" + hostile + "\n"},
		{Time: at, Type: record.Deleted, APIVersion: "example.com/v1", Kind: "Widget", Name: "w", AfterGap: true},
	}
	for i := range recs {
		poison(reflect.ValueOf(&recs[i]).Elem())
	}
	return recs
}

// poison appends hostile to every string a record carries, values and
// map keys included (but empty ones), but the record type and the operation, which
// kubediff sets: a field added to the record later is covered too.
func poison(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			poison(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() && f.Name != "Type" && f.Name != "Op" {
				poison(v.Field(i))
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			poison(v.Index(i))
		}
	case reflect.String:
		if v.Len() > 0 { // what is absent stays absent: Unified chooses the layout
			v.SetString(v.String() + hostile)
		}
	case reflect.Interface:
		if !v.IsNil() {
			v.Set(reflect.ValueOf(poisoned(v.Elem().Interface())))
		}
	}
}

// poisoned is a copy of a JSON-like value with hostile in every string.
func poisoned(x any) any {
	switch x := x.(type) {
	case string:
		return x + hostile
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = poisoned(e)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k+hostile] = poisoned(e)
		}
		return out
	}
	return x
}

// TestTextOutputEscapesWhatTheClusterWrote: whatever a cluster puts in a
// record, text output (plain, coloured, folded) writes no control
// character a terminal would obey, but its own colours, and shows the
// hostile bytes visibly instead.
func TestTextOutputEscapesWhatTheClusterWrote(t *testing.T) {
	for _, color := range []bool{false, true} {
		t.Run(fmt.Sprintf("color=%v", color), func(t *testing.T) {
			var out bytes.Buffer
			sink := NewText(&out, color)
			for _, c := range hostileRecords() {
				if err := sink.Notify(context.Background(), c); err != nil {
					t.Fatal(err)
				}
			}
			assertTerminalSafe(t, out.String(), color)
			// One line of each part of a record.
			for _, visible := range []string{
				`ConfigMap\x1b[2J\x1b]52;c;cGF5bG9hZA==\a\r\a\x7f\u009b31m\x9b\u202e prod`, // kind, namespace
				`by ServiceAccount ns\x1b[2J`, // user
				`(kubectl-edit\x1b[2J`,        // manager
				`spec.items[key=x].v\x1b[2J`,  // path
				`\u001b[2J\u001b]52;c;cGF5bG9hZA==\u0007\r\u0007\x7f\u009b31m\ufffd\u202e" →`, // value
				`+ c\x1b[2J`,           // a value's changed line
				`+  mode: safe\x1b[2J`, // unified diff
			} {
				if !strings.Contains(out.String(), visible) {
					t.Errorf("output does not show %s:\n%s", visible, out.String())
				}
			}
		})
	}
}

func TestFoldedTextEscapesWhatTheClusterWrote(t *testing.T) {
	var out bytes.Buffer
	sink := NewFoldingText(&out, true)
	var burst []record.Change
	for i := range 4 {
		c := record.Change{Time: at, Type: record.Updated, Kind: "Pod", Namespace: "day", Name: fmt.Sprintf("web-%d", i),
			Owner:   &record.Owner{Kind: "ReplicaSet", Name: "web-5d"},
			Changes: []record.FieldChange{{Op: record.OpReplace, Path: "/spec/x", Field: "spec.x", From: "a", To: "b"}}}
		poison(reflect.ValueOf(&c).Elem())
		burst = append(burst, c)
	}
	for _, c := range burst {
		if err := sink.Notify(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "owned") {
		t.Fatalf("the burst was not folded:\n%s", out.String())
	}
	assertTerminalSafe(t, out.String(), true)
}

// assertTerminalSafe fails if s, without kubediff's own colour codes,
// holds a control character (but newlines, and tabs in a value's lines),
// DEL, a C1 control, a bidirectional override or bytes that are not
// UTF-8.
func assertTerminalSafe(t *testing.T, s string, color bool) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Errorf("output is not UTF-8: %q", s)
	}
	if color {
		p := ansiPalette
		for _, sgr := range []string{p.reset, p.bold, p.dim, p.green, p.yellow, p.red} {
			s = strings.ReplaceAll(s, sgr, "")
		}
	}
	for i, line := range strings.Split(s, "\n") {
		for _, r := range line {
			if (r < 0x20 && r != '\t') || (r >= 0x7f && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
				t.Errorf("line %d holds the raw control %U: %q", i+1, r, line)
				break
			}
		}
	}
}

// TestJSONOutputIsValidAndHoldsNoRawControls: JSON lines stay valid JSON
// that decodes to what the cluster wrote, and hold no raw control
// character either (encoding/json leaves DEL and C1 as they are).
func TestJSONOutputIsValidAndHoldsNoRawControls(t *testing.T) {
	var out bytes.Buffer
	sink := NewJSON(&out)
	recs := hostileRecords()
	for _, c := range recs {
		if err := sink.Notify(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(recs) {
		t.Fatalf("%d lines for %d records", len(lines), len(recs))
	}
	for i, line := range lines {
		if !json.Valid([]byte(line)) {
			t.Fatalf("line %d is not JSON: %q", i+1, line)
		}
		var got record.Change
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatal(err)
		}
		// Bytes that are not UTF-8 become U+FFFD in JSON, as encoding/json does.
		if want := strings.ToValidUTF8(recs[i].Name, "\uFFFD"); got.Name != want {
			t.Errorf("line %d: name decodes to %q, want %q", i+1, got.Name, want)
		}
	}
	assertTerminalSafe(t, out.String(), false)
}

// BenchmarkJSONLine is the JSON output's cost per record, for an ASCII
// record and for one whose values hold non-ASCII text that jsonSafe must
// look through ("…" where a value was cut).
func BenchmarkJSONLine(b *testing.B) {
	ascii := records[1]
	cut := records[3]
	for _, bc := range []struct {
		name string
		c    record.Change
	}{{"ascii", ascii}, {"non-ascii", cut}} {
		b.Run(bc.name, func(b *testing.B) {
			sink := NewJSON(io.Discard)
			b.ReportAllocs()
			for b.Loop() {
				if err := sink.Notify(context.Background(), bc.c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

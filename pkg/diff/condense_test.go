package diff

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/record"
)

// secrets is the Secret type, whose values are always redacted.
var secrets = change.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Kind: "Secret", Namespaced: true}

// nginxConf is a 33-line nginx.conf proxying ten apps; app5's port is
// port (its proxy_pass is line 19).
func nginxConf(port int) string {
	var b strings.Builder
	b.WriteString("server {\n  listen 80;\n")
	for i := range 10 {
		p := 8080
		if i == 5 {
			p = port
		}
		fmt.Fprintf(&b, "  location /app%d {\n    proxy_pass http://app%d:%d;\n  }\n", i, i, p)
	}
	b.WriteString("}\n")
	return b.String()
}

// manyLines is about size bytes of numbered lines, line n (1-based)
// replaced by changed when n > 0.
func manyLines(size, n int, changed string) string {
	var b strings.Builder
	for i := 1; b.Len() < size; i++ {
		if i == n {
			b.WriteString(changed + "\n")
			continue
		}
		fmt.Fprintf(&b, "line %06d of a large generated file\n", i)
	}
	return b.String()
}

// withChar is s with the byte at i replaced by c.
func withChar(s string, i int, c byte) string {
	return s[:i] + string(c) + s[i+1:]
}

// dataUpdate is an update of one data key of an object of resource r,
// from a value (absent if from is nil) to another (absent if to is nil).
func dataUpdate(t *testing.T, r change.Resource, key string, from, to *string) change.Event {
	t.Helper()
	object := func(rv string, v *string) *unstructured.Unstructured {
		data := map[string]any{"other": "x"}
		if v != nil {
			data[key] = *v
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": r.Kind,
			"metadata": map[string]any{"name": "app", "namespace": "ns", "resourceVersion": rv},
			"data":     data,
		}}
	}
	return change.Event{Type: change.Updated, Resource: r, Old: object("1", from), New: object("2", to)}
}

func ptr(s string) *string { return &s }

func shortSHA(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

func TestCondense(t *testing.T) {
	big := strings.Repeat("abcdefghij", 1<<20/10)
	bigLines := manyLines(1<<20, 0, "")
	tests := []struct {
		name string
		ev   change.Event
		// check looks at the one change; the record's JSON is bounded by
		// maxRecord bytes.
		check     func(t *testing.T, fc record.FieldChange)
		maxRecord int
	}{
		{
			name: "one line of a 33-line nginx.conf: one hunk, that line and three of context",
			ev:   dataUpdate(t, configMaps, "nginx.conf", ptr(nginxConf(8080)), ptr(nginxConf(8081))),
			check: func(t *testing.T, fc record.FieldChange) {
				want := &record.LineDiff{FromLines: 33, ToLines: 33, Hunks: []record.Hunk{{
					FromLine: 16, FromCount: 7, ToLine: 16, ToCount: 7,
					Lines: []string{
						"      proxy_pass http://app4:8080;",
						"    }",
						"    location /app5 {",
						"-     proxy_pass http://app5:8080;",
						"+     proxy_pass http://app5:8081;",
						"    }",
						"    location /app6 {",
						"      proxy_pass http://app6:8080;",
					},
				}}}
				if !reflect.DeepEqual(fc.Lines, want) {
					got, _ := json.Marshal(fc.Lines)
					t.Fatalf("lines = %s", got)
				}
				if got := fc.Lines.Hunks[0].Header(); got != "@@ -16,7 +16,7 @@" {
					t.Errorf("header = %q", got)
				}
				// The hunk shows the change; from and to would carry its
				// lines a second time: only the full values' sizes and
				// hashes go beside it.
				if !fc.Truncated || fc.From != nil || fc.To != nil ||
					fc.FromBytes == nil || *fc.FromBytes != len(nginxConf(8080)) || fc.ToSHA256 == "" || fc.FromSHA256 == fc.ToSHA256 {
					t.Errorf("want no from and to beside the hunk, and the values' sizes and hashes: %+v", fc)
				}
			},
			maxRecord: 1000,
		},
		{
			name: "changes far apart in a long value: a hunk each, numbered",
			// 53 lines of 38 bytes; line 1 and line 51 changed.
			ev: dataUpdate(t, configMaps, "f", ptr(manyLines(2000, 0, "")), ptr(withChar(withChar(manyLines(2000, 0, ""), 4, 'X'), 1900, 'Y'))),
			check: func(t *testing.T, fc record.FieldChange) {
				if fc.Lines == nil || len(fc.Lines.Hunks) != 2 || fc.Lines.FromLines != 53 {
					t.Fatalf("want two hunks in 53 lines, got %+v", fc.Lines)
				}
				h := fc.Lines.Hunks[0]
				if h.FromLine != 1 || h.FromCount != 4 || h.ToCount != 4 || h.Lines[0] != "- line 000001 of a large generated file" || h.Lines[1] != "+ lineX000001 of a large generated file" {
					t.Errorf("first hunk = %+v", h)
				}
				if h := fc.Lines.Hunks[1]; h.FromLine != 48 || h.ToLine != 48 || h.FromCount != 6 || h.Lines[3] != "- line 000051 of a large generated file" || h.Lines[4] != "+ Yine 000051 of a large generated file" {
					t.Errorf("second hunk = %+v", h)
				}
			},
		},
		{
			name: "a line added at the end, the final newline dropped: the note says so",
			ev:   dataUpdate(t, configMaps, "f", ptr("a\nb\n"), ptr("a\nb\nc")),
			check: func(t *testing.T, fc record.FieldChange) {
				want := []string{"  a", "  b", "+ c", `\ no newline at end`}
				if fc.Lines == nil || len(fc.Lines.Hunks) != 1 || !reflect.DeepEqual(fc.Lines.Hunks[0].Lines, want) {
					t.Fatalf("lines = %+v, want %q", fc.Lines, want)
				}
				if got := fc.Lines.Hunks[0].Header(); got != "@@ -1,2 +1,3 @@" {
					t.Errorf("header = %q", got)
				}
			},
		},
		{
			name: "only the final newline added: the last line shows as replaced",
			ev:   dataUpdate(t, configMaps, "f", ptr("a\nb"), ptr("a\nb\n")),
			check: func(t *testing.T, fc record.FieldChange) {
				want := []string{"  a", "- b", `\ no newline at end`, "+ b"}
				if fc.Lines == nil || fc.Lines.FromLines != 2 || fc.Lines.ToLines != 2 || !reflect.DeepEqual(fc.Lines.Hunks[0].Lines, want) {
					t.Fatalf("lines = %+v, want %q", fc.Lines, want)
				}
			},
		},
		{
			name: "a single line becoming two: a line diff",
			ev:   dataUpdate(t, configMaps, "f", ptr("a"), ptr("a\nb")),
			check: func(t *testing.T, fc record.FieldChange) {
				if fc.Lines == nil || !reflect.DeepEqual(fc.Lines.Hunks[0].Lines, []string{"  a", "+ b"}) {
					t.Fatalf("lines = %+v", fc.Lines)
				}
			},
		},
		{
			name: "single-line strings: as before, no line diff, whole",
			ev:   dataUpdate(t, configMaps, "k", ptr("v1"), ptr("v2")),
			check: func(t *testing.T, fc record.FieldChange) {
				want := record.FieldChange{Op: record.OpReplace, Path: "/data/k", Field: "data.k", From: "v1", To: "v2"}
				if !reflect.DeepEqual(fc, want) {
					t.Fatalf("change = %+v, want %+v", fc, want)
				}
			},
		},
		{
			name: "a multi-line string added: whole, no line diff",
			ev:   dataUpdate(t, configMaps, "nginx.conf", nil, ptr(nginxConf(8080))),
			check: func(t *testing.T, fc record.FieldChange) {
				if fc.Op != record.OpAdd || fc.Lines != nil || fc.To != nginxConf(8080) || fc.Truncated {
					t.Fatalf("change = %+v", fc)
				}
			},
		},
		{
			name: "a 4 KiB value: whole",
			ev:   dataUpdate(t, configMaps, "k", ptr(big[:maxValueBytes]), ptr(withChar(big[:maxValueBytes], 10, 'X'))),
			check: func(t *testing.T, fc record.FieldChange) {
				if fc.Truncated || fc.From != big[:maxValueBytes] || fc.FromBytes != nil {
					t.Fatalf("a value of maxValueBytes must stay whole: truncated %v, %d bytes", fc.Truncated, len(fc.From.(string)))
				}
			},
		},
		{
			name: "one character of a 1 MB single-line value: excerpts around it, sizes and hashes",
			ev:   dataUpdate(t, configMaps, "blob", ptr(big), ptr(withChar(big, 500_003, 'X'))),
			check: func(t *testing.T, fc record.FieldChange) {
				checkCut(t, fc, big, withChar(big, 500_003, 'X'))
				if fc.Lines != nil {
					t.Errorf("a single-line value got a line diff")
				}
				from, to := fc.From.(string), fc.To.(string)
				if !strings.HasPrefix(to, "…") || !strings.Contains(to[:120], "X") || strings.Contains(from, "X") {
					t.Errorf("the excerpts do not show the change near their start:\nfrom %.200q\n  to %.200q", from, to)
				}
			},
			maxRecord: 10 << 10,
		},
		{
			name: "one line of a 1 MB multi-line value: one hunk, excerpts, sizes and hashes",
			ev:   dataUpdate(t, configMaps, "big.txt", ptr(bigLines), ptr(manyLines(1<<20, 20_000, "the changed line"))),
			check: func(t *testing.T, fc record.FieldChange) {
				checkCut(t, fc, bigLines, manyLines(1<<20, 20_000, "the changed line"))
				if fc.Lines == nil || len(fc.Lines.Hunks) != 1 || fc.Lines.Truncated {
					t.Fatalf("lines = %+v", fc.Lines)
				}
				h := fc.Lines.Hunks[0]
				if h.FromLine != 19_997 || h.Lines[3] != "- line 020000 of a large generated file" || h.Lines[4] != "+ the changed line" {
					t.Errorf("hunk = %+v", h)
				}
			},
			maxRecord: 10 << 10,
		},
		{
			name: "a 1 MB multi-line value rewritten: hunks cut with old and new lines, record bounded",
			ev:   dataUpdate(t, configMaps, "big.txt", ptr(bigLines), ptr(strings.ReplaceAll(bigLines, "line", "LINE"))),
			check: func(t *testing.T, fc record.FieldChange) {
				checkCut(t, fc, bigLines, strings.ReplaceAll(bigLines, "line", "LINE"))
				if fc.Lines == nil || !fc.Lines.Truncated || len(fc.Lines.Hunks) != 1 {
					t.Fatalf("lines = %+v", fc.Lines)
				}
				h := fc.Lines.Hunks[0]
				if h.FromCount < 10 || h.ToCount < 10 || h.Lines[0] != "- line 000001 of a large generated file" || h.Lines[h.FromCount] != "+ LINE 000001 of a large generated file" {
					t.Errorf("want old lines then as many new ones, got %d and %d: %q", h.FromCount, h.ToCount, h.Lines)
				}
			},
			maxRecord: 10 << 10,
		},
		{
			name: "a 1 MB value added: cut, its size and hash, nothing about a from",
			ev:   dataUpdate(t, configMaps, "blob", nil, ptr(big)),
			check: func(t *testing.T, fc record.FieldChange) {
				if fc.Op != record.OpAdd || !fc.Truncated || fc.ToBytes == nil || *fc.ToBytes != len(big) || fc.ToSHA256 != shortSHA(big) ||
					fc.FromBytes != nil || fc.FromSHA256 != "" || fc.From != nil {
					t.Fatalf("change = %+v", fc)
				}
				if to := fc.To.(string); !strings.HasPrefix(to, "abcdefghij") || !strings.HasSuffix(to, "…") {
					t.Errorf("an added value is cut to its head: %.40q", to)
				}
			},
			maxRecord: 4 << 10,
		},
		{
			name: "a long line in a multi-line value: cut around its change in the hunk",
			ev:   dataUpdate(t, configMaps, "f", ptr("a\n"+big[:2000]+"\nb\n"), ptr("a\n"+withChar(big[:2000], 1500, 'X')+"\nb\n")),
			check: func(t *testing.T, fc record.FieldChange) {
				lines := fc.Lines.Hunks[0].Lines
				if len(lines[1]) > maxLineBytes+10 || !strings.HasPrefix(lines[2], "+ …") || !strings.Contains(lines[2], "X") {
					t.Fatalf("hunk lines = %q", lines)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := New(Options{Now: fixedNow, Rules: Rules{Defaults: AllDefaults}})
			if err != nil {
				t.Fatal(err)
			}
			c, ok := d.Diff(tt.ev)
			if !ok || len(c.Changes) != 1 {
				t.Fatalf("want one change, got %+v", c.Changes)
			}
			tt.check(t, c.Changes[0])
			if c.Changed != c.Changes[0].Field {
				t.Errorf("changed = %q, want the field %q", c.Changed, c.Changes[0].Field)
			}
			out, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			if tt.maxRecord > 0 && len(out) > tt.maxRecord {
				t.Errorf("record is %d bytes, want at most %d", len(out), tt.maxRecord)
			}
		})
	}
}

// TestPatchAndUnifiedCutLongValues: the optional renderings carry no
// long value whole either, and still show the change.
func TestPatchAndUnifiedCutLongValues(t *testing.T) {
	d, err := New(Options{Now: fixedNow, Rules: Rules{Defaults: AllDefaults}, Patch: true, Unified: true})
	if err != nil {
		t.Fatal(err)
	}
	big := manyLines(1<<20, 0, "")
	ev := dataUpdate(t, configMaps, "big.txt", ptr(big), ptr(manyLines(1<<20, 20_000, "the changed line")))
	// An unchanged long value elsewhere must not show as changed.
	for _, o := range []*unstructured.Unstructured{ev.Old, ev.New} {
		o.Object["data"].(map[string]any)["same"] = big
	}
	c, ok := d.Diff(ev)
	if !ok {
		t.Fatal("no record")
	}
	patch, _ := json.Marshal(c.Patch)
	if len(c.Patch) != 1 || len(patch) > 2<<10 || !strings.Contains(string(patch), "the changed line") {
		t.Errorf("patch of %d bytes: %.300s", len(patch), patch)
	}
	if len(c.Unified) > 2<<10 || strings.Count(c.Unified, "@@ ") != 1 || !strings.Contains(c.Unified, "+    the changed line\n") {
		t.Errorf("unified diff of %d bytes:\n%.2000s", len(c.Unified), c.Unified)
	}
}

// checkCut checks a change between two long values: both cut to an
// excerpt, with the full values' sizes and hashes.
func checkCut(t *testing.T, fc record.FieldChange, from, to string) {
	t.Helper()
	if !fc.Truncated {
		t.Fatal("not marked truncated")
	}
	if fc.FromBytes == nil || *fc.FromBytes != len(from) || fc.ToBytes == nil || *fc.ToBytes != len(to) {
		t.Errorf("sizes %v, %v; want %d, %d", fc.FromBytes, fc.ToBytes, len(from), len(to))
	}
	if fc.FromSHA256 != shortSHA(from) || fc.ToSHA256 != shortSHA(to) || len(fc.FromSHA256) != 16 {
		t.Errorf("hashes %q, %q; want %q, %q", fc.FromSHA256, fc.ToSHA256, shortSHA(from), shortSHA(to))
	}
	for _, v := range []any{fc.From, fc.To} {
		if s, _ := v.(string); len(s) > excerptBytes+2*len("…") {
			t.Errorf("excerpt of %d bytes", len(s))
		}
	}
}

// TestMultiLineSecretShowsOnlyHashes: Secrets' values, and sensitive
// ConfigMap keys', are redacted before comparison, so a multi-line value
// (a key, a config with credentials) gets no line diff and no line of it
// shows, whatever its size, in the changes, the patch or the unified style.
func TestMultiLineSecretShowsOnlyHashes(t *testing.T) {
	oldKey := "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n-----END PRIVATE KEY-----\n"
	newKey := "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQDzXq1k5MHxz6aa\n-----END PRIVATE KEY-----\n"
	for _, tt := range []struct {
		name     string
		resource change.Resource
		key      string
		from, to string
	}{
		{"a Secret's key, one line changed", secrets, "tls.key", oldKey, newKey},
		{"a large Secret, one line changed", secrets, "tls.key", manyLines(1<<20, 0, "") + oldKey, manyLines(1<<20, 0, "") + newKey},
		{"a sensitive ConfigMap key", configMaps, "app-secret.yaml", "user: app\npassword: hunter2\n", "user: app\npassword: hunter3\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := New(Options{Now: fixedNow, Rules: Rules{Defaults: AllDefaults}, Redact: RedactOptions{Keys: []string{"*secret*"}}, Patch: true, Unified: true})
			if err != nil {
				t.Fatal(err)
			}
			c, ok := d.Diff(dataUpdate(t, tt.resource, tt.key, ptr(tt.from), ptr(tt.to)))
			if !ok || len(c.Changes) != 1 {
				t.Fatalf("want one change, got %+v", c.Changes)
			}
			fc := c.Changes[0]
			from, _ := fc.From.(string)
			to, _ := fc.To.(string)
			if !isRedacted(from) || !isRedacted(to) || from == to {
				t.Errorf("want two different redaction hashes, got %q → %q", from, to)
			}
			if fc.Lines != nil || fc.Truncated {
				t.Errorf("a redacted value got a line diff or a cut: %+v", fc)
			}
			out, _ := json.Marshal(c)
			for _, line := range append(splitLines(tt.from), splitLines(tt.to)...) {
				if strings.Contains(string(out), line) || strings.Contains(c.Unified, line) {
					t.Fatalf("record shows the line %q: %s\n%s", line, out, c.Unified)
				}
			}
		})
	}
}

func TestExcerpt(t *testing.T) {
	a, b := strings.Repeat("a", 100), strings.Repeat("b", 100)
	e5, e49 := strings.Repeat("é", 5), strings.Repeat("é", 49) // é is two bytes
	lines := strings.Repeat("abcdefghi\n", 30)
	for _, tt := range []struct {
		name         string
		s, other     string
		limit        int
		want, wantIn string
	}{
		{name: "short enough: whole", s: "abc", other: "x", limit: 3, want: "abc"},
		{name: "no other: the head", s: "abcdef", limit: 3, want: "abc…"},
		{name: "equal: the head", s: "abcdef", other: "abcdef", limit: 3, want: "abc…"},
		{name: "around the difference", s: a + "X" + b, other: a + "Y" + b, limit: 70, want: "…" + a[:excerptContext] + "Xbbbbb…"},
		{name: "as much after it on both sides", s: a + "XX" + b, other: a + "Y" + b, limit: 70, want: "…" + a[:excerptContext] + "XXbbbb…"},
		{name: "the other side of that", s: a + "Y" + b, other: a + "XX" + b, limit: 70, want: "…" + a[:excerptContext] + "Ybbbb…"},
		{name: "a difference at the end", s: a + "X", other: a, limit: 70, want: "…" + a[:excerptContext] + "X"},
		{name: "on rune boundaries", s: e49 + "é" + e49 + "é", other: e49 + "è" + e49 + "é", limit: 11, want: "…" + e5 + "…"},
		{name: "at line ends", s: lines + "X\n" + lines, other: lines + "Y\n" + lines, limit: 200, want: "…" + lines[:70] + "X\n" + lines[:120] + "…"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := excerpt(tt.s, tt.other, tt.limit); got != tt.want {
				t.Fatalf("excerpt = %q, want %q", got, tt.want)
			}
		})
	}
}

// numbered is n lines "line <i> x", line i (0-based) passed through edit.
func numbered(n int, edit func(i int, line string) string) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(edit(i, fmt.Sprintf("line %d x", i)) + "\n")
	}
	return b.String()
}

func same(_ int, line string) string { return line }

// TestLineDiffWindows covers the cases lineOpCodes bounds the matcher's
// work for: the hunks stay right, and within maxHunkBytes.
func TestLineDiffWindows(t *testing.T) {
	for _, tt := range []struct {
		name          string
		a, b          string
		wantHeaders   []string
		wantTruncated bool
	}{
		{
			name: "300 lines inserted: more than a window",
			a:    numbered(3000, same),
			b: numbered(3000, func(i int, line string) string {
				if i == 1000 {
					return line + "\n" + strings.TrimSuffix(numbered(300, func(i int, _ string) string { return fmt.Sprintf("new %d", i) }), "\n")
				}
				return line
			}),
			wantHeaders: []string{"@@ -999,6 +999,306 @@"},
		},
		{
			name: "two lines 26,000 lines apart",
			a:    numbered(27000, same),
			b: numbered(27000, func(i int, line string) string {
				if i == 500 || i == 26500 {
					return "changed"
				}
				return line
			}),
			wantHeaders: []string{"@@ -498,7 +498,7 @@", "@@ -26498,7 +26498,7 @@"},
		},
		{
			name: "2,000 lines changed across 27,000: the first hunks",
			a:    numbered(27000, same),
			b: numbered(27000, func(i int, line string) string {
				if i%13 == 6 {
					return strings.Replace(line, "x", "y", 1)
				}
				return line
			}),
			wantTruncated: true,
		},
		{
			name:          "every other line changed",
			a:             numbered(2000, same),
			b:             numbered(2000, func(i int, line string) string { return line + strings.Repeat("!", i%2) }),
			wantTruncated: true,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ld := lineDiff(tt.a, tt.b)
			size := 0
			var headers []string
			for _, h := range ld.Hunks {
				headers = append(headers, h.Header())
				for _, l := range h.Lines {
					size += len(l)
				}
			}
			if ld.Truncated != tt.wantTruncated || size > maxHunkBytes {
				t.Fatalf("truncated %v, %d bytes of lines; want %v, at most %d", ld.Truncated, size, tt.wantTruncated, maxHunkBytes)
			}
			if tt.wantHeaders != nil && !reflect.DeepEqual(headers, tt.wantHeaders) {
				t.Fatalf("hunks %q, want %q", headers, tt.wantHeaders)
			}
			if err := applyHunks(tt.a, tt.b, ld); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// applyHunks checks that ld's hunks are consistent with a and b: numbered
// and counted right, context and old lines as in a, new lines as in b.
// Unless ld is truncated or a line was cut, applying them to a gives b.
func applyHunks(a, b string, ld *record.LineDiff) error {
	al, bl := splitLines(a), splitLines(b)
	var out []string
	i := 0
	cutLine := false
	for _, h := range ld.Hunks {
		if h.FromLine-1 < i || h.FromLine-1 > len(al) {
			return fmt.Errorf("hunk %s starts at old line %d, after line %d", h.Header(), h.FromLine, i)
		}
		out = append(out, al[i:h.FromLine-1]...)
		i = h.FromLine - 1
		if h.ToLine-1 != len(out) {
			return fmt.Errorf("hunk %s starts at new line %d, but %d lines precede it", h.Header(), h.ToLine, len(out))
		}
		from, to := 0, 0
		for _, l := range h.Lines {
			prefix, text := l[:2], l[2:]
			cutLine = cutLine || strings.Contains(text, "…")
			switch prefix {
			case "  ", "- ":
				if i >= len(al) || al[i] != text && !strings.Contains(text, "…") {
					return fmt.Errorf("hunk %s: %q is not old line %d", h.Header(), l, i+1)
				}
				if prefix == "  " {
					out = append(out, al[i])
					to++
				}
				i++
				from++
			case "+ ":
				out = append(out, text)
				to++
			case `\ `:
			default:
				return fmt.Errorf("line %q has no known prefix", l)
			}
		}
		if from != h.FromCount || to != h.ToCount {
			return fmt.Errorf("hunk %s holds %d old and %d new lines", h.Header(), from, to)
		}
	}
	out = append(out, al[i:]...)
	if !ld.Truncated && !cutLine && !reflect.DeepEqual(out, bl) {
		return fmt.Errorf("the hunks applied to the old value do not give the new one")
	}
	return nil
}

// FuzzLineDiff checks, for any two strings, that the hunks are consistent
// with both and, unless cut, turn the one into the other.
func FuzzLineDiff(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nB\nc")
	f.Add(nginxConf(8080), nginxConf(8081))
	f.Add("", "x\n")
	f.Add("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "1\n2\nx\n4\n5\n6\n7\n8\ny\n10\n")
	f.Fuzz(func(t *testing.T, a, b string) {
		if a == b {
			return
		}
		if err := applyHunks(a, b, lineDiff(a, b)); err != nil {
			t.Fatalf("%v\na: %q\nb: %q", err, a, b)
		}
	})
}

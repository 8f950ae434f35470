package rules

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/kubediff/kubediff/pkg/record"
)

// bigConfigMap is the ConfigMap: 250 keys, each value 40
// characters.
func bigConfigMap() map[string]any {
	data := map[string]any{}
	for i := range 250 {
		data[fmt.Sprintf("key-%03d", i)] = strings.Repeat("v", 40)
	}
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "big", "namespace": "shop"}, "data": data}
}

func bigConfigMapRecord() *record.Change {
	return &record.Change{Type: record.Updated, APIVersion: "v1", Kind: "ConfigMap", Resource: "configmaps",
		Namespace: "shop", Name: "big", Changed: "data.key-000"}
}

// summaryTold compiles one rule with summary and records what OnSummaryError
// hears.
func summaryTold(t *testing.T, summary string) (*Set, *[]string) {
	t.Helper()
	set, err := Compile([]Spec{{Name: "sum", When: `true`, Summary: summary}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	told := &[]string{}
	set.OnSummaryError = func(rule string, err error) {
		mu.Lock()
		defer mu.Unlock()
		*told = append(*told, rule+": "+err.Error())
	}
	set.OnError = func(rule string, err error, healed bool) {
		t.Errorf("OnError(%s, %v, %v): a summary is no failure of the rule", rule, err, healed)
	}
	return set, told
}

// A summary longer than MaxSummary keeps its first MaxSummary characters
// and says how many more it had.
func TestALongSummaryIsCutSayingHowMuch(t *testing.T) {
	cases := []struct {
		name, summary string
		want          string // the summary's start
		more          int    // characters cut
	}{
		{"every key", `{{ range $k, $v := .object.data }}{{ $k }}={{ $v }} {{ end }}`, "key-000=" + strings.Repeat("v", 40) + " key-001=", 250*49 - 1 - MaxSummary},
		{"multibyte", `{{ range .object.data }}é{{ end }}`, "éé", 250 - MaxSummary},
		{"short", `  {{ .kind }} {{ .name }}  `, "ConfigMap big", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set, told := summaryTold(t, tc.summary)
			v := set.Judge(Input{Record: bigConfigMapRecord(), Object: bigConfigMap()})
			if !strings.HasPrefix(v.Summary, tc.want) {
				t.Errorf("summary starts %.80q, want %q", v.Summary, tc.want)
			}
			note := fmt.Sprintf("… (cut: %d characters more)", tc.more)
			switch {
			case tc.more <= 0 && (strings.Contains(v.Summary, "cut:") || utf8.RuneCountInString(v.Summary) > MaxSummary):
				t.Errorf("summary of %d characters cut: %.80q", utf8.RuneCountInString(v.Summary), v.Summary)
			case tc.more > 0 && (!strings.HasSuffix(v.Summary, note) || utf8.RuneCountInString(strings.TrimSuffix(v.Summary, note)) != MaxSummary):
				t.Errorf("summary of %d characters ends %q, want %d characters and %q",
					utf8.RuneCountInString(v.Summary), v.Summary[max(0, len(v.Summary)-60):], MaxSummary, note)
			}
			if len(*told) != 0 {
				t.Errorf("told %q: a cut summary is no failure", *told)
			}
		})
	}
}

// The summary (the whole object printed for each of a 250-key
// ConfigMap's keys: 15.6 MB, 9.2 s a record) and summaries that loop
// without printing, or call themselves, stop at their limit: the record
// gets the short fallback summary, and the rule's failure is told once,
// not once a record.
func TestASummaryOverItsCostLimitStopsAndIsToldOnce(t *testing.T) {
	cases := []struct{ name, summary, limit string }{
		{"the whole object for each key", `{{ range .object.data }}{{ $.object }}{{ end }}`, "bytes"},
		{"ranges nested without printing", `{{ range .object.data }}{{ range $.object.data }}{{ range $.object.data }}{{ end }}{{ end }}{{ end }}`, "steps"},
		{"printf kept in a variable", `{{ range .object.data }}{{ $s := printf "%v" $.object }}{{ end }}`, "bytes"},
		{"a template calling itself", `{{ define "again" }}{{ template "again" . }}{{ end }}{{ template "again" . }}`, "steps"},
		{"contains over the object", `{{ $s := printf "%v" .object.data }}{{ range .object.data }}{{ range $.object.data }}{{ if contains $s "x" }}{{ end }}{{ end }}{{ end }}`, "read"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set, told := summaryTold(t, tc.summary)
			want := "ConfigMap shop/big: rule sum matched (its summary went over its limit)"
			for range 3 {
				v := set.Judge(Input{Record: bigConfigMapRecord(), Object: bigConfigMap()})
				if v.Summary != want || len(v.Rules) != 1 {
					t.Fatalf("verdict %+.200v, want rule sum and summary %q", v, want)
				}
			}
			if len(*told) != 1 || !strings.Contains((*told)[0], "sum: ") || !strings.Contains((*told)[0], tc.limit) {
				t.Errorf("told %q, want once, of its %s", *told, tc.limit)
			}
		})
	}
}

// A summary that fails to render (an index out of range) leaves the
// record without it, and is told once, not once a record.
func TestASummaryThatFailsIsToldOnce(t *testing.T) {
	set, told := summaryTold(t, `{{ index .changes 5 }}`)
	for range 3 {
		if v := set.Judge(Input{Record: bigConfigMapRecord(), Object: bigConfigMap()}); v.Summary != "" || len(v.Rules) != 1 {
			t.Fatalf("verdict %+v", v)
		}
	}
	if len(*told) != 1 || !strings.Contains((*told)[0], "index out of range") {
		t.Errorf("told %q, want once", *told)
	}
}

// BenchmarkSummaryOverItsLimit is what one record costs a rule whose
// summary goes over its limit, the (the whole object printed for
// each key of a 250-key ConfigMap: 9.2 s a record before the limit) and
// ranges nested without printing.
func BenchmarkSummaryOverItsLimit(b *testing.B) {
	for _, bc := range []struct{ name, summary string }{
		{"object-per-key", `{{ range .object.data }}{{ $.object }}{{ end }}`},
		{"nested-ranges", `{{ range .object.data }}{{ range $.object.data }}{{ range $.object.data }}{{ end }}{{ end }}{{ end }}`},
		{"cut-at-2000", `{{ range $k, $v := .object.data }}{{ $k }}={{ $v }} {{ end }}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			set, err := Compile([]Spec{{Name: "sum", When: `true`, Summary: bc.summary}}, nil)
			if err != nil {
				b.Fatal(err)
			}
			in := Input{Record: bigConfigMapRecord(), Object: bigConfigMap()}
			b.ReportAllocs()
			for b.Loop() {
				set.Judge(in)
			}
		})
	}
}

// The rules are judged on many goroutines (one a watch): each rendering
// has its own budget and text.
func TestSummariesRenderOnManyGoroutines(t *testing.T) {
	set, told := summaryTold(t, `{{ .name }}{{ range .object.data }}.{{ end }}`)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				rec := bigConfigMapRecord()
				rec.Name = fmt.Sprintf("cm-%d-%d", g, i)
				want := rec.Name + strings.Repeat(".", 250)
				if v := set.Judge(Input{Record: rec, Object: bigConfigMap()}); v.Summary != want {
					t.Errorf("summary %q, want %q", v.Summary, want)
					return
				}
			}
		})
	}
	wg.Wait()
	if len(*told) != 0 {
		t.Errorf("told %q", *told)
	}
}

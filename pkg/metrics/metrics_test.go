package metrics

import (
	"fmt"
	"testing"
)

// A cluster that makes a namespace per test run must not grow the
// metrics without end: the first namespaces keep their name, the rest
// are counted as "other"; cluster-scoped objects keep "".
func TestNamespaceLabelIsBounded(t *testing.T) {
	m := New()
	for i := range maxNamespaceLabels {
		if got := m.Namespace(fmt.Sprintf("ns-%d", i)); got != fmt.Sprintf("ns-%d", i) {
			t.Fatalf("namespace %d labelled %q", i, got)
		}
	}
	if got := m.Namespace("one-too-many"); got != "other" {
		t.Errorf("namespace past the bound labelled %q, want other", got)
	}
	if got := m.Namespace("ns-7"); got != "ns-7" {
		t.Errorf("a namespace seen before labelled %q", got)
	}
	if got := m.Namespace(""); got != "" {
		t.Errorf("cluster-scoped labelled %q", got)
	}
}

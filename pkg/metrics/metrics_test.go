package metrics

import (
	"fmt"
	"testing"

	"github.com/kubediff/kubediff/pkg/metrics/metricstest"
)

// A cluster that makes a namespace per test run must not grow the
// metrics without end: the namespaces with the most records keep their
// name, the rest are counted as "other"; cluster-scoped objects keep "".
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

// A namespace that comes to change more often than one named takes its
// label: the label names the busiest namespaces, not the first seen.
func TestBusyNamespaceTakesTheLabelOfAQuietOne(t *testing.T) {
	m := New()
	for i := range maxNamespaceLabels {
		ns := fmt.Sprintf("ci-%d", i)
		for range 2 {
			m.Namespace(ns)
		}
	}
	m.Namespace("ci-0") // the others are quieter
	got := []string{m.Namespace("prod"), m.Namespace("prod"), m.Namespace("prod")}
	if got[0] != "other" || got[1] != "other" || got[2] != "prod" {
		t.Errorf("prod, counted 1, 2, 3 times beside 100 namespaces counted twice: labelled %q, want other, other, prod", got)
	}
	if named := m.namespaces.named; named["ci-1"] || !named["ci-0"] || len(named) != maxNamespaceLabels {
		t.Errorf("after prod took a label: ci-1 (the quietest, first by name) named %v, ci-0 %v, %d named",
			named["ci-1"], named["ci-0"], len(named))
	}
}

// However namespaces come and go, at most twice the bound are ever
// named, so the series stay bounded.
func TestNamespaceLabelsEverNamedAreBounded(t *testing.T) {
	m := New()
	named := map[string]bool{}
	for i := range 50 * maxNamespaceLabels {
		ns := fmt.Sprintf("run-%d", i)
		for range i/maxNamespaceLabels + 1 { // each later one busier
			named[m.Namespace(ns)] = true
		}
	}
	if len(named) > 2*maxNamespaceLabels+1 {
		t.Errorf("%d namespace label values, want at most %d and other", len(named), 2*maxNamespaceLabels)
	}
	if len(m.namespaces.counts) > m.namespaces.maxCounted+1 {
		t.Errorf("%d counts held, want at most %d", len(m.namespaces.counts), m.namespaces.maxCounted)
	}
}

// Several clusters in one process label every metric with their cluster
// already; the change and rule counters must not add a second cluster
// label (Prometheus refuses the duplicate, and the fleet did not start).
func TestFleetCountersCarryTheirClusterOnce(t *testing.T) {
	reg := NewRegistry()
	alpha, beta := ForCluster(reg, "alpha"), ForCluster(reg, "beta")
	alpha.CountChange("alpha", "configmaps", "updated", "shop", "")
	beta.CountChange("beta", "configmaps", "updated", "shop", "warning")
	beta.CountRuleMatch("beta", "image-changed", "warning")
	if n := metricstest.Value(t, reg, "kubediff_changes_total", "cluster", "alpha", "resource", "configmaps", "type", "updated", "namespace", "shop", "severity", ""); n != 1 {
		t.Errorf("alpha's changes = %v, want 1", n)
	}
	if n := metricstest.Value(t, reg, "kubediff_rule_matches_total", "cluster", "beta", "rule", "image-changed", "severity", "warning"); n != 1 {
		t.Errorf("beta's rule matches = %v, want 1", n)
	}
	single := New()
	single.CountChange("prod", "pods", "added", "", "")
	if n := metricstest.Value(t, single.Registry, "kubediff_changes_total", "cluster", "prod", "resource", "pods", "type", "added", "namespace", "", "severity", ""); n != 1 {
		t.Errorf("one cluster's changes = %v, want 1 labelled with its cluster", n)
	}
}

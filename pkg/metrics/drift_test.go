package metrics

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kubediff/kubediff/pkg/metrics/metricstest"
)

func driftOpenValue(t *testing.T, m *Metrics, namespace, owner string) float64 {
	t.Helper()
	return metricstest.Value(t, m.Registry, "kubediff_drift_open", "cluster", "prod", "namespace", namespace, "owner", owner)
}

// Open drift goes up when an object drifts and back to 0 when it is put
// back; kubediff_drift_total counts records by tool and via.
func TestDriftOpenGoesUpAndBack(t *testing.T) {
	m := New()
	m.DriftOpened("prod", "shop", "argocd:Application/argocd/shop")
	m.DriftOpened("prod", "shop", "argocd:Application/argocd/shop")
	if n := driftOpenValue(t, m, "shop", "argocd:Application/argocd/shop"); n != 2 {
		t.Errorf("two objects drifted: %v, want 2", n)
	}
	m.DriftEnded("prod", "shop", "argocd:Application/argocd/shop")
	m.DriftEnded("prod", "shop", "argocd:Application/argocd/shop")
	m.DriftEnded("prod", "shop", "helm:shop/web") // never opened: nothing to take back
	if n := driftOpenValue(t, m, "shop", "argocd:Application/argocd/shop"); n != 0 {
		t.Errorf("both put back: %v, want 0", n)
	}
	if n := testutil.CollectAndCount(m.Registry, "kubediff_drift_open"); n != 1 {
		t.Errorf("%d series, want the one at 0", n)
	}
	m.CountDrift("argocd", "outside")
	m.CountDrift("argocd", "sync")
	m.CountDrift("argocd", "outside")
	if n := metricstest.Value(t, m.Registry, "kubediff_drift_total", "tool", "argocd", "via", "outside"); n != 2 {
		t.Errorf("outside records: %v, want 2", n)
	}
}

// However many owners drift, kubediff_drift_open holds at most
// maxDriftSeries pairs of its own: past them, an owner counts as
// "other" in its namespace, a pair at 0 gives its place to a new one,
// and each end is taken back from the series its start went to.
func TestDriftOpenSeriesAreBounded(t *testing.T) {
	m := New()
	owner := func(i int) string { return fmt.Sprintf("argocd:Application/argocd/app-%d", i) }
	for i := range maxDriftSeries {
		m.DriftOpened("prod", "shop", owner(i))
	}
	m.DriftOpened("prod", "shop", owner(maxDriftSeries))
	m.DriftOpened("prod", "shop", owner(maxDriftSeries))
	if n := driftOpenValue(t, m, "shop", "other"); n != 2 {
		t.Errorf("past the bound: other = %v, want 2", n)
	}
	m.DriftEnded("prod", "shop", owner(0)) // app-0 at 0: its place is free
	m.DriftOpened("prod", "shop", owner(maxDriftSeries))
	if n := driftOpenValue(t, m, "shop", "other"); n != 3 {
		t.Errorf("a pair counted as other stays there while open: %v, want 3", n)
	}
	m.DriftOpened("prod", "shop", owner(maxDriftSeries+1))
	if n := driftOpenValue(t, m, "shop", owner(maxDriftSeries+1)); n != 1 {
		t.Errorf("a new pair takes the place of one at 0: %v, want 1", n)
	}
	for range 3 {
		m.DriftEnded("prod", "shop", owner(maxDriftSeries))
	}
	if n := driftOpenValue(t, m, "shop", "other"); n != 0 {
		t.Errorf("all put back: other = %v, want 0", n)
	}
	if n := testutil.CollectAndCount(m.Registry, "kubediff_drift_open"); n > maxDriftSeries+1 {
		t.Errorf("%d series, want at most %d", n, maxDriftSeries+1)
	}
}

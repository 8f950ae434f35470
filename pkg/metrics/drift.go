package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// maxDriftSeries bounds the (namespace, owner) pairs of
// kubediff_drift_open that get a series of their own: owners come and
// go with every Application a team makes, and each would otherwise
// stay a series for the life of the process.
const maxDriftSeries = 200

// driftOpen keeps kubediff_drift_open: the objects drifted now, per
// namespace and owner. A pair gets a series of its own while fewer than
// maxDriftSeries are named, or by taking the place of a named pair
// whose series stands at 0 (deleted then); otherwise its drift counts
// under owner "other" in its namespace (itself while fewer than
// maxDriftSeries namespaces have such a series, else "other" too). A
// pair counted under "other" stays there while it has drift open, so
// that each end takes back what its start added, from the same series.
type driftOpen struct {
	gauge             *prometheus.GaugeVec
	clusterIsConstant bool

	mu         sync.Mutex
	named      map[driftPair]int          // open drift per named pair
	overflow   map[driftPair]overflowSeat // pairs counted under "other", while drift is open
	namespaces map[string]bool            // namespaces ever given an owner="other" series
}

type driftPair struct{ cluster, namespace, owner string }

type overflowSeat struct {
	count     int
	namespace string // the namespace label it counts under
}

func newDriftOpen(clusterIsConstant bool) *driftOpen {
	return &driftOpen{
		gauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kubediff_drift_open",
			Help: "Objects drifted now from their GitOps owner's declared state (outside changes not put back, as this process saw them since it started), by cluster, namespace and owner (tool:Kind/namespace/name; at most 200 pairs, the rest as owner \"other\").",
		}, byCluster(clusterIsConstant, "namespace", "owner")),
		clusterIsConstant: clusterIsConstant,
		named:             map[driftPair]int{}, overflow: map[driftPair]overflowSeat{}, namespaces: map[string]bool{},
	}
}

// DriftOpened counts an object of namespace whose drift from owner's
// declared state opened, in cluster (ignored when every metric carries
// the cluster already).
func (m *Metrics) DriftOpened(cluster, namespace, owner string) {
	m.driftOpen.add(cluster, namespace, owner, 1)
}

// DriftEnded takes back what DriftOpened counted: the drift was put
// back, or its object is gone.
func (m *Metrics) DriftEnded(cluster, namespace, owner string) {
	m.driftOpen.add(cluster, namespace, owner, -1)
}

func (d *driftOpen) add(cluster, namespace, owner string, delta int) {
	p := driftPair{cluster, namespace, owner}
	d.mu.Lock()
	defer d.mu.Unlock()
	if seat, ok := d.overflow[p]; ok || delta > 0 && !d.seat(p) {
		if !ok {
			seat.namespace = d.otherNamespace(namespace)
		}
		seat.count += delta
		if seat.count <= 0 {
			delete(d.overflow, p)
		} else {
			d.overflow[p] = seat
		}
		d.gauge.WithLabelValues(d.labels(cluster, seat.namespace, "other")...).Add(float64(delta))
		return
	}
	if _, ok := d.named[p]; !ok {
		return // an end whose start was not counted (the metric came later)
	}
	d.named[p] += delta
	d.gauge.WithLabelValues(d.labels(cluster, namespace, owner)...).Add(float64(delta))
}

// seat names p, when it is not named yet, if there is room or a named
// pair at 0 gives its place; false when there is none.
func (d *driftOpen) seat(p driftPair) bool {
	if _, ok := d.named[p]; ok {
		return true
	}
	if len(d.named) >= maxDriftSeries {
		var idle *driftPair
		for q, n := range d.named {
			if n == 0 {
				idle = &q
				break
			}
		}
		if idle == nil {
			return false
		}
		delete(d.named, *idle)
		d.gauge.DeleteLabelValues(d.labels(idle.cluster, idle.namespace, idle.owner)...)
	}
	d.named[p] = 0
	return true
}

// otherNamespace is the namespace label of a pair counted under owner
// "other": its namespace while fewer than maxDriftSeries have one.
func (d *driftOpen) otherNamespace(namespace string) string {
	if d.namespaces[namespace] || len(d.namespaces) < maxDriftSeries {
		d.namespaces[namespace] = true
		return namespace
	}
	return "other"
}

func (d *driftOpen) labels(cluster, namespace, owner string) []string {
	if d.clusterIsConstant {
		return []string{namespace, owner}
	}
	return []string{cluster, namespace, owner}
}

// CountDrift counts a record of a GitOps-owned object by its tool
// (argocd, flux, helm) and how it was made (sync, outside).
func (m *Metrics) CountDrift(tool, via string) {
	m.driftTotal.WithLabelValues(tool, via).Inc()
}

func newDriftTotal() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubediff_drift_total",
		Help: "Change records of GitOps-owned objects, by tool (argocd, flux, helm) and how they were made: via=outside (a change outside the owner: drift) or via=sync (the owner's write), before any rule's drop.",
	}, []string{"tool", "via"})
}

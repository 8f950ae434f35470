// Package metrics exposes kubediff's Prometheus metrics and its health
// endpoints (/healthz, /readyz, /metrics) on one HTTP server.
package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/kubediff/kubediff/pkg/notify"
)

// Metrics are kubediff's own metrics, on a registry of their own so that
// tests and several runs in one process do not collide.
type Metrics struct {
	// Registry is what /metrics serves.
	Registry *prometheus.Registry
	// registerer is where this run's metrics go: Registry, or for one of
	// several clusters, Registry with the cluster's label.
	registerer prometheus.Registerer

	// EventsObserved counts watch events, by resource and type.
	EventsObserved *prometheus.CounterVec
	// RecordsEmitted counts records handed to the sinks, by resource and type.
	RecordsEmitted *prometheus.CounterVec
	// WatchesRunning is how many watches run: one per target (a type in
	// one namespace or all).
	WatchesRunning prometheus.Gauge
	// LastSync is when the watches were last set to a discovered plan.
	LastSync prometheus.Gauge
	// Leader is 1 while this replica emits records, 0 while it follows.
	Leader prometheus.Gauge
	// APIServerConnected is 1 while the API server answers, 0 during an
	// outage (the watches wait for it).
	APIServerConnected prometheus.Gauge
	// IdentityRecords counts records by what the sources said of who
	// made them: named, unknown (nobody said within identity.wait) or
	// ambiguous (writes of several users); IdentityWait is how long
	// each waited for it. Both only with a source (docs/identity.md).
	IdentityRecords *prometheus.CounterVec
	IdentityWait    prometheus.Histogram
	// changes counts the records made, whether or not a sink gets them,
	// by cluster, resource, type, namespace (bounded: see Namespace) and
	// the highest severity of the rules they matched ("" for none);
	// CountChange adds to it.
	changes *prometheus.CounterVec
	// ruleMatches counts the records each rule matched, by cluster, rule
	// and severity (CountRuleMatch); RuleFailures the evaluations of a
	// rule that failed (over the cost limit, or an error), which count
	// as not matched.
	ruleMatches  *prometheus.CounterVec
	RuleFailures *prometheus.CounterVec
	// clusterIsConstant says the registerer labels every metric with the
	// cluster (ForCluster): the counters above then take no cluster label
	// of their own, which Prometheus would refuse as a duplicate.
	clusterIsConstant bool
	// ReleaseRecords counts the records naming the release their object
	// belongs to, by tool (helm, argocd, flux) and whether its state was
	// known (a revision, commit or chart) or only its name, from the
	// object's marks (docs/why.md): "unknown" says kubediff does not see
	// the release's Secrets or Applications.
	ReleaseRecords *prometheus.CounterVec
	// driftOpen is kubediff_drift_open (DriftOpened, DriftEnded) and
	// driftTotal kubediff_drift_total (CountDrift): docs/drift.md.
	driftOpen  *driftOpen
	driftTotal *prometheus.CounterVec

	namespaces topLabels
}

// New registers kubediff's metrics and the Go runtime's.
func New() *Metrics {
	reg := NewRegistry()
	return newOn(reg, reg, false)
}

// NewRegistry returns a registry with the Go runtime's metrics, for
// ForCluster.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// ForCluster registers one cluster's metrics on reg (made by New), each
// labelled cluster=name, for several clusters watched in one process.
func ForCluster(reg *prometheus.Registry, name string) *Metrics {
	return newOn(reg, prometheus.WrapRegistererWith(prometheus.Labels{"cluster": name}, reg), true)
}

// byCluster is labels with the cluster label first, unless the registerer
// already sets it.
func byCluster(clusterIsConstant bool, labels ...string) []string {
	if clusterIsConstant {
		return labels
	}
	return append([]string{"cluster"}, labels...)
}

// CountChange counts a record made in cluster (its name; ignored when
// every metric is labelled with the cluster already).
func (m *Metrics) CountChange(cluster, resource, changeType, namespace, severity string) {
	m.changes.WithLabelValues(m.withCluster(cluster, resource, changeType, m.Namespace(namespace), severity)...).Inc()
}

// CountRuleMatch counts a record the rule matched in cluster.
func (m *Metrics) CountRuleMatch(cluster, rule, severity string) {
	m.ruleMatches.WithLabelValues(m.withCluster(cluster, rule, severity)...).Inc()
}

func (m *Metrics) withCluster(cluster string, values ...string) []string {
	if m.clusterIsConstant {
		return values
	}
	return append([]string{cluster}, values...)
}

func newOn(reg *prometheus.Registry, registerer prometheus.Registerer, clusterIsConstant bool) *Metrics {
	m := &Metrics{
		Registry: reg, registerer: registerer, clusterIsConstant: clusterIsConstant,
		EventsObserved: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubediff_events_observed_total", Help: "Watch events observed, by resource and type.",
		}, []string{"resource", "type"}),
		RecordsEmitted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubediff_records_emitted_total", Help: "Change records handed to the sinks, by resource and type.",
		}, []string{"resource", "type"}),
		WatchesRunning: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kubediff_watches_running", Help: "Watches running (one per type and namespace scope).",
		}),
		LastSync: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kubediff_last_sync_timestamp_seconds", Help: "When the watches were last set to a fresh discovery of the types (Unix time); time since is time() minus this.",
		}),
		Leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kubediff_leader", Help: "1 while this replica emits records, 0 while it follows.",
		}),
		APIServerConnected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kubediff_apiserver_connected", Help: "1 while the API server answers, 0 while it does not (the watches wait for it and resume).",
		}),
		IdentityRecords: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubediff_identity_records_total", Help: "Records by what the sources of identity said of who made them: named, unknown, ambiguous.",
		}, []string{"result"}),
		IdentityWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kubediff_identity_wait_seconds", Help: "How long records waited for a source of identity to say who made them.",
			Buckets: []float64{0.001, 0.01, 0.1, 0.25, 0.5, 1, 1.5, 2, 3, 5, 10, 30, 60},
		}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubediff_changes_total", Help: "Change records made (before any sink's match, a rule's drop or the leader gate), by cluster, resource, type, namespace (the 100 with the most records; the rest \"other\") and the highest severity of the rules they matched (\"\" for none).",
		}, byCluster(clusterIsConstant, "resource", "type", "namespace", "severity")),
		ruleMatches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubediff_rule_matches_total", Help: "Change records each rule matched, by cluster, rule and severity.",
		}, byCluster(clusterIsConstant, "rule", "severity")),
		RuleFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubediff_rule_failures_total", Help: "Evaluations of a rule that failed (over the cost limit, or an error), counted as not matched, by rule.",
		}, []string{"rule"}),
		ReleaseRecords: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubediff_release_records_total", Help: "Change records naming the release their object belongs to, by tool and state: known (its revision, commit or chart) or unknown (its name alone).",
		}, []string{"tool", "state"}),
		driftOpen:  newDriftOpen(clusterIsConstant),
		driftTotal: newDriftTotal(),
		namespaces: newTopLabels(maxNamespaceLabels),
	}
	m.APIServerConnected.Set(1)
	registerer.MustRegister(m.EventsObserved, m.RecordsEmitted, m.WatchesRunning, m.LastSync, m.Leader, m.APIServerConnected,
		m.changes, m.ruleMatches, m.RuleFailures, m.ReleaseRecords, m.driftOpen.gauge, m.driftTotal)
	return m
}

// maxNamespaceLabels bounds the namespace label of kubediff_changes_total:
// a cluster that creates a namespace per test run or per tenant must not
// grow the metrics without end.
const maxNamespaceLabels = 100

// Namespace is ns as the namespace label says it: itself while it is
// among the 100 namespaces with the most records since kubediff started
// (and "" for cluster-scoped objects), "other" otherwise (topLabels).
func (m *Metrics) Namespace(ns string) string {
	return m.namespaces.value(ns)
}

// topLabels names the max values counted most often, and "other" the
// rest. A value that comes to be counted more often than the least of
// those named takes its place: its records from then on count under its
// name, while the one it displaced counts as "other" again (its series
// stays, as counters never go down, so sums over the label stay whole).
// To keep the series bounded, at most maxEver values are ever named;
// after that, only those named before can be again. The counts of values
// not named are forgotten when more than maxCounted are held.
type topLabels struct {
	mu         sync.Mutex
	max        int
	counts     map[string]uint64 // records per value since start
	named      map[string]bool   // at most max
	ever       map[string]bool   // named once or more, at most maxEver
	maxEver    int
	maxCounted int
}

func newTopLabels(max int) topLabels {
	return topLabels{max: max, maxEver: 2 * max, maxCounted: 100 * max,
		counts: map[string]uint64{}, named: map[string]bool{}, ever: map[string]bool{}}
}

func (b *topLabels) value(v string) string {
	if v == "" {
		return v
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.counts[v]++
	if b.named[v] {
		return v
	}
	if !b.ever[v] && len(b.ever) >= b.maxEver {
		b.forget()
		return "other"
	}
	if len(b.named) >= b.max {
		least := b.leastNamed()
		if b.counts[v] <= b.counts[least] {
			b.forget()
			return "other"
		}
		delete(b.named, least)
	}
	b.named[v], b.ever[v] = true, true
	return v
}

// leastNamed is the named value counted least often (the first in name
// order of equals, so that the choice does not depend on map order).
func (b *topLabels) leastNamed() string {
	least := ""
	for v := range b.named {
		if least == "" || b.counts[v] < b.counts[least] || (b.counts[v] == b.counts[least] && v < least) {
			least = v
		}
	}
	return least
}

// forget drops the counts of values not named when more than maxCounted
// are held: a cluster making a namespace per test run would otherwise
// keep a count for each.
func (b *topLabels) forget() {
	if len(b.counts) <= b.maxCounted {
		return
	}
	for v := range b.counts {
		if !b.named[v] {
			delete(b.counts, v)
		}
	}
}

// AddIdentity exposes IdentityRecords and IdentityWait, for a run with
// a source of identity.
func (m *Metrics) AddIdentity() {
	m.registerer.MustRegister(m.IdentityRecords, m.IdentityWait)
}

// queueCollector reads the sinks' counters when scraped, so the queues
// need not know about Prometheus.
type queueCollector struct {
	queues                                                       []notify.Queue
	delivered, failed, dropped, retries, queueLength, queueBytes *prometheus.Desc
}

// AddQueues exposes per-sink delivery counters and queue depth.
func (m *Metrics) AddQueues(queues []notify.Queue) {
	sink := []string{"sink"}
	m.registerer.MustRegister(&queueCollector{
		queues:      queues,
		delivered:   prometheus.NewDesc("kubediff_sink_deliveries_total", "Records delivered, by sink.", sink, nil),
		failed:      prometheus.NewDesc("kubediff_sink_failures_total", "Records a sink refused for good (after retries or a final error), by sink.", sink, nil),
		dropped:     prometheus.NewDesc("kubediff_sink_drops_total", "Records dropped because a sink's queue was full, or (without a state dir) shutdown's drain timed out, by sink.", sink, nil),
		retries:     prometheus.NewDesc("kubediff_sink_retries_total", "Delivery attempts retried after a transient failure, by sink.", sink, nil),
		queueLength: prometheus.NewDesc("kubediff_sink_queue_depth", "Records waiting for delivery, by sink.", sink, nil),
		queueBytes:  prometheus.NewDesc("kubediff_sink_queue_bytes", "Encoded size of the records waiting in a sink's queue in the state dir (0 without one), by sink.", sink, nil),
	})
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.delivered, c.failed, c.dropped, c.retries, c.queueLength, c.queueBytes} {
		ch <- d
	}
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	for _, q := range c.queues {
		s := q.Stats()
		ch <- prometheus.MustNewConstMetric(c.delivered, prometheus.CounterValue, float64(s.Delivered), q.Name())
		ch <- prometheus.MustNewConstMetric(c.failed, prometheus.CounterValue, float64(s.Failed), q.Name())
		ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(s.Dropped), q.Name())
		ch <- prometheus.MustNewConstMetric(c.retries, prometheus.CounterValue, float64(s.Retries), q.Name())
		ch <- prometheus.MustNewConstMetric(c.queueLength, prometheus.GaugeValue, float64(s.Waiting), q.Name())
		ch <- prometheus.MustNewConstMetric(c.queueBytes, prometheus.GaugeValue, float64(s.WaitingBytes), q.Name())
	}
}

// AddTypeHealth exports, at each scrape, the watched types that cannot be
// listed or watched now: kubediff_type_failing{resource,namespace} 1 for
// each (bounded by the types watched), and how many.
func (m *Metrics) AddTypeHealth(failing func() (resources, namespaces []string)) {
	m.registerer.MustRegister(&typeHealthCollector{
		failing: failing,
		each:    prometheus.NewDesc("kubediff_type_failing", "1 for each watched type (and namespace) that cannot be listed or watched now; its changes are reported once it can.", []string{"resource", "namespace"}, nil),
		count:   prometheus.NewDesc("kubediff_types_failing", "Watched types (per namespace) that cannot be listed or watched now.", nil, nil),
	})
}

type typeHealthCollector struct {
	failing     func() (resources, namespaces []string)
	each, count *prometheus.Desc
}

func (c *typeHealthCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.each
	ch <- c.count
}

func (c *typeHealthCollector) Collect(ch chan<- prometheus.Metric) {
	resources, namespaces := c.failing()
	for i := range resources {
		ch <- prometheus.MustNewConstMetric(c.each, prometheus.GaugeValue, 1, resources[i], namespaces[i])
	}
	ch <- prometheus.MustNewConstMetric(c.count, prometheus.GaugeValue, float64(len(resources)))
}

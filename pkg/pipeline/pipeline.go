// Package pipeline is the path of a change from the watch to the sinks,
// readable top to bottom in Handle, one named stage after another:
//
//	watcher ──Event──▶ filter ──▶ diff ──record──▶ coalesce ──▶ identify ──▶ gitops ──▶ judge ──▶ keep ──▶ gate ──▶ route ──▶ sink queues
//	  (before caching: CacheTransform, the diff's prune and redact passes)
//	                     └─▶ events (a Kubernetes Event: a fact about its object) ──▶ history, gate
//
// Each stage is a type with one job: filter (filter.go) drops what the
// server could not, diff (pkg/diff) makes the record, coalesce
// (coalesce.go) joins a controller's quick steps, events (events.go)
// reads a Kubernetes Event as a fact about the object it regards,
// identify (identify.go) names the user behind each record when a source
// says and the release its object belongs to (pkg/release), gitops
// (drift.go) whether its object's GitOps owner made it or someone
// outside it, and what drifted (pkg/drift), judge (judge.go)
// names the rules each record matches and counts it, keep (keep.go) hands
// each record to the history, the gate (gate.go) lets
// only the elected leader emit, and route (route.go) hands the record to
// each sink's queue (pkg/notify).
package pipeline

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/kubediff/kubediff/pkg/diff"
	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/drift"
	"github.com/kubediff/kubediff/pkg/kubeevents"
	"github.com/kubediff/kubediff/pkg/metrics"
	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/release"
	"github.com/kubediff/kubediff/pkg/rules"
	"github.com/kubediff/kubediff/pkg/watcher"
)

// Options are what the stages need.
type Options struct {
	// Differ turns events into records.
	Differ *diff.Differ
	// Router hands records to the sinks' queues.
	Router notify.Router
	// Metrics count events observed and records emitted.
	Metrics *metrics.Metrics
	// ExcludeNamespaces are namespace globs never reported. The server
	// filters the namespaces that existed at the first plan; namespaces
	// created later that match are filtered here.
	ExcludeNamespaces []string
	// OwnLeases are kubediff's own election Leases ("namespace/name"),
	// never reported: a leader reporting the progress it publishes would
	// publish again on delivering that record, forever.
	OwnLeases []string
	// Election makes the gate start as a follower: it holds up to
	// HoldRecords records until leader.Elector makes it lead, and tracks
	// delivery progress for a takeover. Without it, the pipeline emits
	// from the start.
	Election    bool
	HoldRecords int
	// Holds keeps held updates' stored states in place (the state dir's
	// store; nil without a state dir).
	Holds StateHolds
	// History keeps every record with the object's states (the state
	// dir's store; nil without history): a watch event's go in its note,
	// which the watcher's Journal takes with the object's new state.
	History Keeper
	// Identities name the user behind each record (identity.Book; nil
	// without a source), each record waiting for them up to
	// IdentityWait.
	Identities   Identities
	IdentityWait time.Duration
	// Releases name the release each record's object belongs to
	// (release.Book; nil: not joined), each record waiting for the state
	// written before it up to ReleaseWait. The cache transform shows the
	// Book every state of the types that hold releases.
	Releases    *release.Book
	ReleaseWait time.Duration
	// Rules name the records that matter (nil: none).
	Rules *rules.Set
	// Events, when set, reads Kubernetes Events as facts about the
	// objects they regard (events.go); without it, Event objects are
	// changes like any other.
	Events *EventOptions
	// Objects finds objects as the watcher caches them: the Namespaces,
	// to mark a deletion made while its namespace was being deleted
	// (nil: only the namespace controller as user marks it).
	Objects ObjectLookup
	// Cluster names the cluster on every record.
	Cluster *record.Cluster
	Log     *slog.Logger
}

// Pipeline carries watch events to the sinks.
type Pipeline struct {
	metrics  *metrics.Metrics
	filter   filter
	differ   *diff.Differ
	coalesce *coalescer
	identify *identify     // nil without identities or releases
	releases *release.Book // nil: releases are not joined
	events   *eventFacts   // nil: Events are changes like any other
	// applied keeps what GitOps-owned objects' last-applied-configuration
	// declares, read by the cache transform (pkg/drift).
	applied *drift.AppliedBook
	// gitopsIgnores keeps Applications' ignoreDifferences, read by the
	// cache transform (pkg/drift).
	gitopsIgnores *drift.Ignores
	// namespaces marks deletions made while their namespace was deleted.
	namespaces *namespaceDeletions
	gate       *Gate
	cluster    atomic.Pointer[record.Cluster]
}

// New connects the stages, last to first.
func New(o Options) *Pipeline {
	gate := newGate(route{router: o.Router, metrics: o.Metrics}, o.HoldRecords, o.Election, o.Log)
	if !o.Election {
		gate.Lead(0)
	}
	p := &Pipeline{
		metrics:    o.Metrics,
		filter:     filter{excludeNamespaces: o.ExcludeNamespaces, ownLeases: o.OwnLeases},
		differ:     o.Differ,
		gate:       gate,
		releases:   o.Releases,
		namespaces: newNamespaceDeletions(o.Objects),
	}
	p.cluster.Store(o.Cluster)
	var next emitter = keep{history: o.History, cluster: &p.cluster, next: gate}
	next = judge{rules: o.Rules, namespaces: p.namespaces, cluster: &p.cluster, metrics: o.Metrics, next: next}
	p.applied, p.gitopsIgnores = drift.NewAppliedBook(), drift.NewIgnores(o.Log)
	classifier := drift.New(o.Log, p.applied, p.gitopsIgnores)
	if o.Releases != nil && o.Objects != nil {
		classifier.SetManifests(helmManifests{releases: o.Releases, types: o.Objects, differ: o.Differ})
	}
	next = newGitops(classifier, o.Metrics, &p.cluster, next)
	if o.Identities != nil || o.Releases != nil {
		p.identify = newIdentify(nil, o.IdentityWait, next, o.Holds)
		next = p.identify
	}
	if o.Identities != nil {
		p.identify.who = o.Identities
		p.identify.silence = &sourceSilence{log: o.Log}
		if o.Metrics != nil {
			o.Metrics.AddIdentity()
			p.identify.observe = func(result string, waited time.Duration) {
				o.Metrics.IdentityRecords.WithLabelValues(result).Inc()
				o.Metrics.IdentityWait.Observe(waited.Seconds())
			}
		}
	}
	if o.Releases != nil {
		p.identify.releases, p.identify.releaseWait = o.Releases, o.ReleaseWait
	}
	if p.identify != nil {
		gate.settle += max(p.identify.wait, p.identify.releaseWait) // a record may wait that much longer before the gate
	}
	p.coalesce = newCoalescer(o.Differ, next, o.Holds)
	if o.Events != nil {
		p.events = &eventFacts{EventOptions: *o.Events, history: o.History, cluster: &p.cluster, next: gate, now: time.Now, shown: map[string]time.Time{}}
	}
	return p
}

// NewClusterID makes the records that follow name the cluster by id: the
// cluster behind the API server's address was rebuilt (a new kube-system
// UID), and what is reported from now on comes from the new one.
func (p *Pipeline) NewClusterID(id string) {
	c := record.Cluster{ID: id}
	if old := p.cluster.Load(); old != nil {
		c.Name = old.Name
	}
	p.cluster.Store(&c)
}

// Handle is the watcher's handler: it runs on the reflector's goroutine
// and does not block (the gate holds or enqueues, queues drop when full),
// except that stdout's queue waits for its reader: a slow pipe slows the
// watches down instead of losing records.
func (p *Pipeline) Handle(ev watcher.Event) {
	p.metrics.EventsObserved.WithLabelValues(ev.Resource.GVR.Resource, string(ev.Type)).Inc()
	if p.releases != nil && ev.Type == watcher.Deleted && release.Source(ev.Resource.GVR.Group, ev.Resource.GVR.Resource) {
		p.releases.Forget(ev.Resource.GVR.Group, ev.Resource.GVR.Resource, ev.Old)
	}
	if ev.Type == watcher.Deleted && ev.Old != nil && drift.IgnoreSource(ev.Resource.GVR.Group, ev.Resource.GVR.Resource) {
		p.gitopsIgnores.Forget(ev.Old.GetKind(), ev.Old.GetNamespace(), ev.Old.GetName())
	}
	p.namespaces.observe(ev) // before its objects' deletions that come after it
	// 1. Filter what the server could not, and kubediff's own Leases.
	if p.filter.drops(ev) {
		return
	}
	// 1b. An Event is a fact about the object it regards (events.go):
	// kept in the history beside that object's changes, and shown in
	// the stream under it, not as a change of the Event object.
	if p.events != nil && kubeevents.IsEvent(ev.Resource.GVR.Group, ev.Resource.Kind) {
		if !p.events.handle(ev) || !p.events.AsChanges {
			return
		}
	}
	// 2. Diff: nothing to report when only ignored fields changed. A
	// quiet change (a status counter) still moves the object's state in
	// the history, so that what it answers for a moment is what the
	// cluster held then.
	c, ok := p.differ.Diff(ev.Event)
	if !ok {
		if diff.Quiet(c) {
			p.coalesce.quiet(ev, c)
		}
		return
	}
	// 3. Coalesce: a controller's quick steps on an object become one
	// record (its state before them diffed against its state after). It
	// passes every record on to
	// 3b. identify: the user who made it, when a source said, and the
	// release its object belongs to (or waits for them, briefly); then
	// 3c. gitops: made by the object's GitOps owner or outside it, and
	// what drifted from the declared state (pkg/drift); then
	// 3d. judge: the rules it matches (a drop rule keeps only the
	// object's state); then
	// 4. keep: the history keeps it with the object's states; then
	// 5. the gate: the leader emits, a follower holds the record for a
	// takeover; and the gate to
	// 6. route: each sink whose match selects the record gets it queued.
	p.coalesce.add(ev, c)
}

// Run releases the records the pipeline holds, to merge them (see
// coalesce.go) or to name who made them (identify.go), until ctx is
// done, and then all of them.
func (p *Pipeline) Run(ctx context.Context) {
	var identifying sync.WaitGroup
	if p.identify != nil {
		identifying.Go(func() { p.identify.run(ctx) })
	}
	p.coalesce.run(ctx)
	identifying.Wait()
}

// CacheTransform is what each object of type r goes through before the
// watcher caches it: the diff drops what is never reported and redacts
// sensitive values, so the cache is smaller, each update has less to
// compare, and secrets never sit in memory in the clear. The types that
// hold releases' states (Helm's release Secrets, Applications,
// Kustomizations, HelmReleases) are shown to the release Book first:
// it reads a Helm release's chart metadata before its data is redacted;
// a GitOps-owned object's last-applied-configuration is read for drift
// (pkg/drift) before the transform prunes it, and redacted as the object.
func (p *Pipeline) CacheTransform(r discovery.Resource) cache.TransformFunc {
	transform := p.differ.CacheTransform(r)
	group, resource := r.GVR.Group, r.GVR.Resource
	if kubeevents.IsEvent(group, r.Kind) {
		return func(obj any) (any, error) {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				kubeevents.Scrub(u) // an Event about a Secret keeps no message, in memory or on disk
			}
			return transform(obj)
		}
	}
	releases := p.releases != nil && release.Source(group, resource)
	ignoreSource := drift.IgnoreSource(group, resource)
	redact := redactWith(transform)
	return func(obj any) (any, error) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			if releases {
				p.releases.Observe(group, resource, u)
			}
			if ignoreSource {
				p.gitopsIgnores.Observe(u)
			}
			// What a GitOps-owned object's last-applied-configuration
			// declares, before the transform prunes it (pkg/drift).
			p.applied.Observe(u, redact)
		}
		return transform(obj)
	}
}

// redactWith is transform for a decoded object alone: nil when it fails.
func redactWith(transform cache.TransformFunc) func(*unstructured.Unstructured) *unstructured.Unstructured {
	return func(u *unstructured.Unstructured) *unstructured.Unstructured {
		out, err := transform(u)
		if err != nil {
			return nil
		}
		redacted, _ := out.(*unstructured.Unstructured)
		return redacted
	}
}

// Gate is the leader gate, for the election to open and close.
func (p *Pipeline) Gate() *Gate { return p.gate }

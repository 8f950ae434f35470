package watcher

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/journal"
)

// Options configure a Watcher.
type Options struct {
	// Logger receives operational logs.
	Logger *slog.Logger
	// Transform, when set, returns the function each object of a type goes
	// through before it is cached (diff.Differ.CacheTransform: drop what is
	// never reported, redact secrets).
	Transform func(discovery.Resource) cache.TransformFunc
	// OnConnection, when set, is told when the API server stops answering
	// (false) and answers again (true).
	OnConnection func(connected bool)
	// OnNewCluster, when set, is told the kube-system namespace's UID of
	// the cluster behind the API server's address when it changed (a
	// cluster rebuilt or restored there: cluster.go), before the records
	// that follow from it are made.
	OnNewCluster func(uid string)
	// Journal, when set, keeps every target's objects on disk, and a
	// target with stored objects reports what changed since as its first
	// list comes in (changes made while kubediff was down).
	Journal Journal
	// Compress packs each type's cached objects against a dictionary made
	// of the type's first objects (packing.go): a third of the memory, for
	// about 2 µs an object.
	Compress bool
	// ReadBatching lets the events of a watch busy enough to bring
	// several in this long wait up to this long to be read together
	// (batch.go); 0 reads each as it comes.
	ReadBatching time.Duration
	// Rules fingerprints what Transform does (diff.Differ.RulesFingerprint):
	// objects stored under other rules go through Transform again when
	// restored, and are stored again as they then are.
	Rules string
}

// Watcher runs a reflector per target and reports the changes they see to
// a Handler.
//
// Each target has its own reflector and lifetime (its own context) rather
// than an informer from a shared factory, so that a type is stopped alone
// when its CRD is deleted, its version changes, or access to it is
// withdrawn. client-go's Reflector does the listing, watching, streaming
// lists, bookmarks, backoff and relisting; the store it fills is
// kubediff's (store.go), and so is the watch decoder (stream.go).
type Watcher struct {
	dynamic dynamic.Interface
	rest    rest.Interface
	handler Handler
	opts    Options

	packer     *packer // nil: the cache is not compressed
	health     *apiHealth
	cluster    *clusterCheck
	startProbe sync.Once
	events     atomic.Uint64 // events handed to the handler
	listedAt   atomic.Int64  // unix nanoseconds of the last list that completed

	mu      sync.Mutex
	targets map[string]*runningTarget // by Target.Key
	// lastSync is when Sync last ran, seenTypes the types (typeKey) it ran.
	lastSync  time.Time
	seenTypes map[string]bool
	wg        sync.WaitGroup
}

type runningTarget struct {
	target discovery.Target
	store  *store
	lw     *listWatch
	health *targetHealth
	cancel context.CancelFunc
	done   chan struct{} // closed when the reflector has stopped
}

// New returns a Watcher that talks to the cluster config points at and
// reports to handler.
func New(config *rest.Config, handler Handler, opts Options) (*Watcher, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	httpClient, err := rest.HTTPClientFor(config)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, err
	}
	// As client-go's own watches: not rate limited (a watch is one long
	// request), and JSON, which the decoder reads line by line.
	wc := dynamic.ConfigFor(config)
	wc.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	wc.AcceptContentTypes, wc.ContentType = "application/json", "application/json"
	raw, err := rest.UnversionedRESTClientForConfigAndClient(wc, httpClient)
	if err != nil {
		return nil, err
	}
	w := &Watcher{dynamic: dyn, rest: raw, handler: handler, opts: opts, targets: map[string]*runningTarget{}}
	if opts.Compress {
		w.packer = newPacker()
	}
	w.cluster = newClusterCheck()
	onChange := func(up bool) {
		if opts.OnConnection != nil {
			opts.OnConnection(up)
		}
	}
	w.health = newAPIHealth(raw, opts.Logger, onChange, w.events.Load)
	w.health.beforeResume = w.checkBeforeResuming
	return w, nil
}

// Connected reports whether the API server answers (see health.go).
func (w *Watcher) Connected() bool { return w.health.connected() }

// Unreachable reports whether err is the API server not answering, which
// the outage lines already report; it asks for a probe so that they do.
// Other requests' callers log their own failures only when this is false.
func (w *Watcher) Unreachable(err error) bool {
	if !w.health.connected() {
		return true
	}
	if !isConnectionError(err) {
		return false
	}
	w.health.probeSoon()
	return true
}

// Sync runs exactly the given targets: it starts reflectors for new ones
// and stops those no longer wanted. A new target's initial list is never
// reported, so a type appearing (a CRD installed, a version switched)
// causes no burst of records. Reflectors stop when ctx is done.
func (w *Watcher) Sync(ctx context.Context, targets []discovery.Target) {
	w.startProbe.Do(func() {
		w.wg.Go(func() { w.health.run(ctx) })
		w.wg.Go(func() { w.followCluster(ctx) })
	})
	// A type (or namespace) absent at the last Sync that is here now
	// appeared since: its first list reports what was created since then,
	// or what was created between a CRD's arrival and the list is lost.
	w.mu.Lock()
	since, seen := w.lastSync, w.seenTypes
	w.lastSync, w.seenTypes = time.Now(), map[string]bool{}
	for _, t := range targets {
		w.seenTypes[typeKey(t)] = true
	}
	w.mu.Unlock()
	want := map[string]bool{}
	for _, t := range targets {
		want[t.Key()] = true
		reportSince := time.Time{}
		if !since.IsZero() && !seen[typeKey(t)] {
			reportSince = since
		}
		w.start(ctx, t, reportSince)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for key, rt := range w.targets {
		if !want[key] {
			rt.cancel()
			delete(w.targets, key)
			w.health.resume(key) // an outage's end waits for it no more
			if w.opts.Journal != nil {
				w.opts.Journal.Forget(key)
			}
			w.opts.Logger.Info("stopped watching", "resource", rt.target.Resource.String(), "version", rt.target.Resource.GVR.Version, "namespace", rt.target.Namespace)
		}
	}
}

// typeKey names a target's type and namespace, whatever its version: a
// version switch is the same objects, not new ones.
func typeKey(t discovery.Target) string {
	return t.Resource.GVR.Group + "/" + t.Resource.GVR.Resource + "|" + t.Namespace
}

// start runs a target. reportSince, when set, makes its first list report
// the objects created since then as added (a type that appeared while
// kubediff ran).
func (w *Watcher) start(ctx context.Context, t discovery.Target, reportSince time.Time) {
	key := t.Key()
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.targets[key]; ok {
		return
	}
	toCache := w.cacheTransform(t.Resource)
	health := newTargetHealth()
	logErr := w.watchErrorLogger(ctx, t, health)
	s := &store{toCache: cacheForm(toCache), emit: w.emitter(t.Resource), objects: map[string]*compactObject{}, reportSince: reportSince,
		health: health, listed: func() { w.listed(t, health) }}
	if w.opts.Journal != nil {
		s.persist = &persisted{journal: w.opts.Journal, target: key, rules: w.opts.Rules, logErr: logErr}
		objects, ok, err := s.persist.restore(w.packer.forType(t.Resource.GVR.String()), toCache)
		if err != nil {
			w.opts.Logger.Warn("cannot read this type's stored state: changes made while kubediff was down are not reported for it", "resource", t.Resource.String(), "namespace", t.Namespace, "err", err)
		}
		if ok {
			s.objects, s.restored = objects, true
		}
	}
	lw := &listWatch{target: t, dynamic: w.dynamic, rest: w.rest, toCache: toCache, logErr: logErr, health: w.health, batching: w.opts.ReadBatching}
	if t.Namespaces != "" {
		lw.keep = t.Namespaces.Matcher()
	}
	lw.expected.Store(-1)
	rt := &runningTarget{target: t, store: s, lw: lw, health: health}
	w.targets[key] = rt
	w.run(ctx, rt)
}

// listed is told of each list of t that worked: a target that was
// failing works again, which is said once.
func (w *Watcher) listed(t discovery.Target, h *targetHealth) {
	w.listedAt.Store(time.Now().UnixNano())
	if ended, was := h.heal(); was {
		w.opts.Logger.Info("listed again: watching", "resource", t.Resource.String(), "namespace", t.Namespace, "failedWith", ended)
	}
}

// lastListed is when any target's list last completed (zero: none yet).
func (w *Watcher) lastListed() time.Time {
	if n := w.listedAt.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// run starts rt's reflector. A reflector started again over the same store
// (relistAll) begins with a list, compared with what the store holds.
func (w *Watcher) run(ctx context.Context, rt *runningTarget) {
	r := cache.NewReflectorWithOptions(rt.lw.listerWatcher(), &compactObject{}, rt.store, cache.ReflectorOptions{
		Name: rt.target.Key(), TypeDescription: rt.target.Resource.String(),
	})
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	rt.cancel, rt.done = cancel, done
	logger := logr.FromSlogHandler(ReflectorLogs(w.opts.Logger.With("source", "client-go").Handler()))
	w.wg.Go(func() {
		defer close(done)
		r.RunWithContext(klog.NewContext(rctx, logger))
	})
}

// cacheTransform applies Options.Transform, then makes the cache form.
func (w *Watcher) cacheTransform(r discovery.Resource) func(*unstructured.Unstructured, bool) (*compactObject, error) {
	var transform cache.TransformFunc
	if w.opts.Transform != nil {
		transform = w.opts.Transform(r)
	}
	packer := w.packer.forType(r.GVR.String())
	return func(u *unstructured.Unstructured, keepDecoded bool) (*compactObject, error) {
		if transform != nil {
			obj, err := transform(u)
			if err != nil {
				return nil, err
			}
			if u, _ = obj.(*unstructured.Unstructured); u == nil {
				return nil, fmt.Errorf("transform of %s returned %T", r, obj)
			}
		}
		w.cluster.see(u.GetResourceVersion())
		return compact(u, keepDecoded, packer)
	}
}

// emitter turns a store's changes into Events for the handler.
func (w *Watcher) emitter(r discovery.Resource) func(EventType, *compactObject, *compactObject, bool, *journal.Note) {
	return func(t EventType, oldObj, newObj *compactObject, relisted bool, note *journal.Note) {
		ev := Event{Event: change.Event{Type: t, Resource: r, FinalStateUnknown: relisted && t == Deleted, AfterGap: relisted}, Note: note}
		var err error
		if oldObj != nil {
			ev.Old, err = expand(oldObj)
		}
		if newObj != nil && err == nil {
			ev.New, err = expand(newObj)
		}
		if err != nil {
			w.opts.Logger.Error("cannot read a cached object; change not reported", "resource", r.String(), "err", err)
			return
		}
		w.events.Add(1)
		w.handler(ev)
	}
}

// Targets returns what is watched now.
func (w *Watcher) Targets() []discovery.Target {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]discovery.Target, 0, len(w.targets))
	for _, rt := range w.targets {
		out = append(out, rt.target)
	}
	return out
}

// Wait blocks until every reflector has stopped (after ctx passed to Watch
// is done).
func (w *Watcher) Wait() { w.wg.Wait() }

// Object returns an object of the type group/resource as the watcher
// caches it now (pruned and redacted), or nil when no watch of the type
// holds it. It is for facts about an object (its owners), read beside a
// change; the object must not be modified.
func (w *Watcher) Object(group, resource, namespace, name string) *unstructured.Unstructured {
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	w.mu.Lock()
	var stores []*store
	for _, rt := range w.targets {
		if gvr := rt.target.Resource.GVR; gvr.Group == group && gvr.Resource == resource {
			stores = append(stores, rt.store)
		}
	}
	w.mu.Unlock()
	for _, s := range stores {
		s.mu.Lock()
		c := s.objects[key]
		s.mu.Unlock()
		if c == nil {
			continue
		}
		if u, err := decodeCompact(c); err == nil {
			return u
		}
	}
	return nil
}

package watcher

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/kubediff/kubediff/pkg/discovery"
)

// Options configure a Watcher.
type Options struct {
	// ResyncPeriod is passed to informers; resyncs never produce events.
	ResyncPeriod time.Duration
	// Logger receives operational logs.
	Logger *slog.Logger
	// Transform, when set, returns the function each object of a type goes
	// through before it is cached (diff.Differ.CacheTransform: drop what is
	// never reported, redact secrets).
	Transform func(discovery.Resource) cache.TransformFunc
}

// Watcher runs informers and reports their events to a Handler.
//
// Each informer has its own lifetime (its own context) rather than sharing
// one factory-wide stop channel, so that a type is stopped alone when its
// CRD is deleted, its version changes, or access to it is withdrawn.
type Watcher struct {
	client  dynamic.Interface
	handler Handler
	opts    Options

	mu        sync.Mutex
	informers map[string]*runningInformer // by Target.Key
	wg        sync.WaitGroup
}

type runningInformer struct {
	target   discovery.Target
	informer cache.SharedIndexInformer
	synced   cache.ResourceEventHandlerRegistration
	cancel   context.CancelFunc
}

// New returns a Watcher that reports to handler.
func New(client dynamic.Interface, handler Handler, opts Options) *Watcher {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Watcher{
		client:    client,
		handler:   handler,
		opts:      opts,
		informers: map[string]*runningInformer{},
	}
}

// Sync runs exactly the given targets: it starts informers for new ones and
// stops those no longer wanted. A new informer's initial list is never
// reported, so a type appearing (a CRD installed, a version switched)
// causes no burst of records. Informers stop when ctx is done.
func (w *Watcher) Sync(ctx context.Context, targets []discovery.Target) error {
	want := map[string]bool{}
	for _, t := range targets {
		want[t.Key()] = true
		if err := w.start(ctx, t); err != nil {
			return err
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for key, ri := range w.informers {
		if !want[key] {
			ri.cancel()
			delete(w.informers, key)
			w.opts.Logger.Info("stopped watching", "resource", ri.target.Resource.String(), "version", ri.target.Resource.GVR.Version, "namespace", ri.target.Namespace)
		}
	}
	return nil
}

func (w *Watcher) start(ctx context.Context, t discovery.Target) error {
	key := t.Key()
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.informers[key]; ok {
		return nil
	}
	tweak := func(o *metav1.ListOptions) {
		o.LabelSelector, o.FieldSelector = t.LabelSelector, t.FieldSelector
	}
	// No indexers: kubediff only looks objects up by key, and each index
	// costs memory per cached object.
	inf := dynamicinformer.NewFilteredDynamicInformer(w.client, t.Resource.GVR, t.Namespace, w.opts.ResyncPeriod, cache.Indexers{}, tweak).Informer()
	if err := inf.SetTransform(w.cacheTransform(t.Resource)); err != nil {
		return err
	}
	if err := inf.SetWatchErrorHandlerWithContext(w.watchErrorLogger(t)); err != nil {
		return err
	}
	reg, err := inf.AddEventHandler(w.eventHandler(t.Resource))
	if err != nil {
		return err
	}
	ictx, cancel := context.WithCancel(ctx)
	w.informers[key] = &runningInformer{target: t, informer: inf, synced: reg, cancel: cancel}
	w.wg.Go(func() { inf.RunWithContext(ictx) })
	return nil
}

// watchErrorLogger logs each distinct list/watch error of an informer once
// at warning level and repeats at debug level, so a type that is gone or
// forbidden does not flood the logs while the reflector backs off.
func (w *Watcher) watchErrorLogger(t discovery.Target) cache.WatchErrorHandlerWithContext {
	var mu sync.Mutex
	seen := map[string]bool{}
	return func(ctx context.Context, _ *cache.Reflector, err error) {
		if ctx.Err() != nil || errors.Is(err, io.EOF) {
			return // stopping, or a watch the server closed normally
		}
		mu.Lock()
		first := !seen[err.Error()]
		seen[err.Error()] = true
		mu.Unlock()
		attrs := []any{"resource", t.Resource.String(), "namespace", t.Namespace, "err", err}
		switch {
		case apierrors.IsNotFound(err):
			w.opts.Logger.Debug("type no longer served; waiting for rediscovery to stop its informer", attrs...)
		case first:
			w.opts.Logger.Warn("list/watch failed; retrying with backoff", attrs...)
		default:
			w.opts.Logger.Debug("list/watch failed again", attrs...)
		}
	}
}

// cacheTransform applies Options.Transform, then stores the object in
// compact form.
func (w *Watcher) cacheTransform(r discovery.Resource) cache.TransformFunc {
	var transform cache.TransformFunc
	if w.opts.Transform != nil {
		transform = w.opts.Transform(r)
	}
	return func(obj any) (any, error) {
		if transform != nil {
			var err error
			if obj, err = transform(obj); err != nil {
				return nil, err
			}
		}
		if u, ok := obj.(*unstructured.Unstructured); ok {
			return compact(u)
		}
		return obj, nil
	}
}

func (w *Watcher) eventHandler(r discovery.Resource) cache.ResourceEventHandler {
	emit := func(t EventType, oldObj, newObj any, unknown bool) {
		ev := Event{Type: t, Resource: r, FinalStateUnknown: unknown}
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
		w.handler(ev)
	}
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			// Objects that existed before the first sync are not news.
			if !isInInitialList {
				emit(Added, nil, obj, false)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			// A resync replays the cached object unchanged: compared
			// before anything is decoded.
			if resourceVersion(oldObj) != resourceVersion(newObj) {
				emit(Updated, oldObj, newObj, false)
			}
		},
		DeleteFunc: func(obj any) {
			// After a missed watch event the informer only knows the last
			// state it cached: report that.
			tomb, unknown := obj.(cache.DeletedFinalStateUnknown)
			if unknown {
				obj = tomb.Obj
			}
			emit(Deleted, obj, nil, unknown)
		},
	}
}

// Progress describes how far the initial sync has come.
type Progress struct {
	Informers int // informers running
	Synced    int // informers whose cache has synced and whose handler caught up
	Types     int // distinct types watched
	Objects   int // objects cached across all informers
}

// Progress returns the current sync progress.
func (w *Watcher) Progress() Progress {
	w.mu.Lock()
	defer w.mu.Unlock()
	var p Progress
	types := map[string]bool{}
	for _, ri := range w.informers {
		p.Informers++
		types[ri.target.Resource.GVR.String()] = true
		if ri.synced.HasSynced() {
			p.Synced++
		}
		p.Objects += len(ri.informer.GetStore().ListKeys())
	}
	p.Types = len(types)
	return p
}

// Targets returns what is watched now.
func (w *Watcher) Targets() []discovery.Target {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]discovery.Target, 0, len(w.informers))
	for _, ri := range w.informers {
		out = append(out, ri.target)
	}
	return out
}

// Unsynced names the informers whose cache has not synced yet.
func (w *Watcher) Unsynced() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, ri := range w.informers {
		if !ri.synced.HasSynced() {
			out = append(out, ri.target.Resource.String()+"@"+ri.target.Namespace)
		}
	}
	sort.Strings(out)
	return out
}

// Wait blocks until every informer has stopped (after ctx passed to Watch
// is done).
func (w *Watcher) Wait() { w.wg.Wait() }

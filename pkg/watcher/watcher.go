package watcher

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/kubediff/kubediff/pkg/discovery"
)

// Options configure a Watcher.
type Options struct {
	// Namespaces limits watching to these namespaces. Empty means all
	// namespaces, through one cluster-wide informer per type. When set,
	// cluster-scoped types are not watched.
	Namespaces []string
	// ResyncPeriod is passed to informers; resyncs never produce events.
	ResyncPeriod time.Duration
	// Logger receives operational logs.
	Logger *slog.Logger
}

// Watcher runs informers and reports their events to a Handler.
//
// Each informer has its own lifetime (its own context) rather than sharing
// one factory-wide stop channel, so that a type can later be stopped alone
// when its CRD is deleted.
type Watcher struct {
	client  dynamic.Interface
	handler Handler
	opts    Options

	mu        sync.Mutex
	informers map[informerKey]*runningInformer
	wg        sync.WaitGroup
}

type informerKey struct {
	resource  string // Resource.String() plus version, unique per GVR
	namespace string
}

type runningInformer struct {
	resource discovery.Resource
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
		informers: map[informerKey]*runningInformer{},
	}
}

// Watch starts informers for the given types; types already watched are
// left alone. Informers stop when ctx is done.
func (w *Watcher) Watch(ctx context.Context, resources []discovery.Resource) error {
	for _, r := range resources {
		for _, ns := range w.scopes(r) {
			if err := w.start(ctx, r, ns); err != nil {
				return err
			}
		}
	}
	return nil
}

// scopes returns the namespaces to run informers in for r ("" is all).
func (w *Watcher) scopes(r discovery.Resource) []string {
	if len(w.opts.Namespaces) == 0 {
		return []string{""}
	}
	if !r.Namespaced {
		return nil
	}
	return w.opts.Namespaces
}

func (w *Watcher) start(ctx context.Context, r discovery.Resource, namespace string) error {
	key := informerKey{resource: r.GVR.String(), namespace: namespace}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.informers[key]; ok {
		return nil
	}
	// No indexers: kubediff only looks objects up by key, and each index
	// costs memory per cached object.
	inf := dynamicinformer.NewFilteredDynamicInformer(w.client, r.GVR, namespace, w.opts.ResyncPeriod, cache.Indexers{}, nil).Informer()
	if err := inf.SetTransform(stripForCache); err != nil {
		return err
	}
	reg, err := inf.AddEventHandler(w.eventHandler(r))
	if err != nil {
		return err
	}
	ictx, cancel := context.WithCancel(ctx)
	w.informers[key] = &runningInformer{resource: r, informer: inf, synced: reg, cancel: cancel}
	w.wg.Go(func() { inf.RunWithContext(ictx) })
	return nil
}

func (w *Watcher) eventHandler(r discovery.Resource) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			// Objects that existed before the first sync are not news.
			if isInInitialList {
				return
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				w.handler(Event{Type: Added, Resource: r, New: u})
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*unstructured.Unstructured)
			n, ok2 := newObj.(*unstructured.Unstructured)
			// A resync replays the cached object unchanged.
			if !ok1 || !ok2 || o.GetResourceVersion() == n.GetResourceVersion() {
				return
			}
			w.handler(Event{Type: Updated, Resource: r, Old: o, New: n})
		},
		DeleteFunc: func(obj any) {
			// After a missed watch event the informer only knows the last
			// state it cached: report that.
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				w.handler(Event{Type: Deleted, Resource: r, Old: u})
			}
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
	for key, ri := range w.informers {
		p.Informers++
		types[key.resource] = true
		if ri.synced.HasSynced() {
			p.Synced++
		}
		p.Objects += len(ri.informer.GetStore().ListKeys())
	}
	p.Types = len(types)
	return p
}

// Wait blocks until every informer has stopped (after ctx passed to Watch
// is done).
func (w *Watcher) Wait() { w.wg.Wait() }

package discovery

import (
	"context"
	"log/slog"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// typeSources are the objects whose changes add or remove types.
var typeSources = []Resource{
	{GVR: schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, Kind: "CustomResourceDefinition"},
	{GVR: schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}, Kind: "APIService"},
}

// followUps are when to look again after a CRD or APIService changed: a
// CRD is Established a moment before discovery serves its types, and a
// loaded API server takes longer (one look 2 s later once missed a type
// for the 3 minutes until the next interval).
var followUps = []time.Duration{2 * time.Second, 5 * time.Second, 15 * time.Second}

// Monitor calls reconcile whenever the set of types may have changed: when
// a CustomResourceDefinition or APIService is created, changed or deleted
// (watched through metadata only, so nothing else of them is cached), and
// every Interval to catch what a watch missed.
type Monitor struct {
	// Metadata watches CRDs and APIServices; nil relies on Interval alone.
	Metadata metadata.Interface
	// Access skips the watches the credentials may not make; nil tries.
	Access   *AccessChecker
	Interval time.Duration
	Log      *slog.Logger
}

// Run calls reconcile until ctx is done. reconcile is never called
// concurrently with itself.
func (m *Monitor) Run(ctx context.Context, reconcile func(context.Context)) {
	trigger := make(chan struct{}, 1)
	if m.Metadata != nil {
		m.watchTypeSources(ctx, trigger)
	}
	interval := m.Interval
	if interval <= 0 {
		interval = 3 * time.Minute
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	again := time.NewTimer(time.Hour)
	again.Stop()
	next := len(followUps) // the next follow-up; none pending
	for {
		select {
		case <-ctx.Done():
			return
		case <-trigger:
			reconcile(ctx)
			next = 0
			again.Reset(followUps[0])
		case <-again.C:
			reconcile(ctx)
			if next++; next < len(followUps) {
				again.Reset(followUps[next] - followUps[next-1])
			}
		case <-tick.C:
			reconcile(ctx)
		}
	}
}

func (m *Monitor) watchTypeSources(ctx context.Context, trigger chan<- struct{}) {
	notify := func() {
		select {
		case trigger <- struct{}{}:
		default: // one pending trigger is enough
		}
	}
	handler := func(r Resource) cache.ResourceEventHandlerDetailedFuncs {
		return cache.ResourceEventHandlerDetailedFuncs{
			AddFunc: func(_ any, initial bool) {
				if !initial {
					notify()
				}
			},
			UpdateFunc: func(oldObj, newObj any) {
				if mayChangeTypes(r, oldObj, newObj) {
					notify()
				}
			},
			DeleteFunc: func(any) { notify() },
		}
	}
	for _, r := range typeSources {
		go func() {
			if !m.mayWatch(ctx, r) {
				return
			}
			inf := metadatainformer.NewFilteredMetadataInformer(m.Metadata, r.GVR, "", 0, cache.Indexers{}, nil).Informer()
			if _, err := inf.AddEventHandler(handler(r)); err != nil {
				m.Log.Warn("cannot watch for new types", "resource", r.String(), "err", err)
				return
			}
			inf.RunWithContext(ctx)
		}()
	}
}

// mayWatch asks whether r may be watched, again and again while the
// answer is an error (the API server down at that moment): a passing
// failure must not leave kubediff without its CRD watch for good. A
// denial is said once.
func (m *Monitor) mayWatch(ctx context.Context, r Resource) bool {
	if m.Access == nil {
		return true
	}
	wait := time.Second
	for {
		ok, why, err := m.Access.Allowed(ctx, r, "")
		switch {
		case err == nil && !ok:
			m.Log.Warn("cannot watch for new types; relying on periodic rediscovery", "resource", r.String(), "reason", why)
			return false
		case err == nil:
			return true
		}
		m.Log.Debug("cannot check access to watch for new types yet", "resource", r.String(), "err", err)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Minute)
	}
}

// mayChangeTypes says whether an update of a CRD or APIService can change
// the types served. An established CRD's types follow its spec, whose
// every change bumps its generation: an operator re-applying its CRDs unchanged, or
// the API server updating their status, must not cost a full rediscovery
// per write. An APIService's availability is its status, so any of its
// updates may.
func mayChangeTypes(r Resource, oldObj, newObj any) bool {
	o, ok1 := oldObj.(metav1.Object)
	n, ok2 := newObj.(metav1.Object)
	if !ok1 || !ok2 || r.Kind != "CustomResourceDefinition" {
		return true
	}
	// A new CRD's status steps (names accepted, established) come before
	// discovery serves its types: those updates are looked at.
	young := time.Since(n.GetCreationTimestamp().Time) < newCRD
	return young || o.GetGeneration() != n.GetGeneration() || !o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp())
}

// newCRD is how long after its creation a CRD's every update may still
// change the types served.
const newCRD = 30 * time.Second

package watcher

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The cluster behind the API server's address can change under a running
// kubediff: etcd restored from a backup (resourceVersions go back) or
// wiped and rebuilt (kube-system gets a new UID). Each reflector would
// then resume its watch from a resourceVersion the new etcd reached long
// ago or never did, and see nothing, or only part, for minutes. So the
// watcher checks the cluster at start, when the server answers again
// after an outage (before the watches resume, so that a rebuilt cluster's
// events carry its identity: Options.OnNewCluster) and every
// clusterCheckEvery, and when it changed, says so once and lists every
// type again: the lists are compared with what kubediff held, and what
// differs is reported (objects gone as deletions, a name with a new UID
// as a deletion and an addition).

// clusterCheckEvery is how often the cluster is checked while connected.
const clusterCheckEvery = 30 * time.Second

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// clusterCheck remembers what tells one cluster from another.
type clusterCheck struct {
	maxSeen atomic.Uint64 // highest resourceVersion of any object seen
	changed chan string   // why the cluster changed, found before the watches resumed

	checking sync.Mutex // one check at a time: two would both see a change
	identity string     // kube-system's UID, under checking
}

func newClusterCheck() *clusterCheck { return &clusterCheck{changed: make(chan string, 1)} }

// see notes an object's resourceVersion. Versions that are not numbers
// (a storage other than etcd) are not compared.
func (c *clusterCheck) see(rv string) {
	if c == nil {
		return // a watcher built without New, in tests
	}
	v, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return
	}
	for {
		old := c.maxSeen.Load()
		if v <= old || c.maxSeen.CompareAndSwap(old, v) {
			return
		}
	}
}

// compare returns why the cluster is not the one seen before, or "" when
// it is (or the server did not say). seen is the highest resourceVersion
// seen before current was asked for: a version seen later may be newer
// than current without anything wrong (the watches go on meanwhile).
func (c *clusterCheck) compare(uid string, seen, current uint64) string {
	before := c.identity
	if uid != "" {
		c.identity = uid
	}
	switch {
	case before != "" && uid != "" && uid != before:
		return "kube-system has a new UID: the cluster was rebuilt"
	case current > 0 && current < seen:
		return fmt.Sprintf("resourceVersions went back from %d to %d: etcd was restored from a backup", seen, current)
	}
	return ""
}

// followCluster checks the cluster until ctx is done.
func (w *Watcher) followCluster(ctx context.Context) {
	tick := time.NewTicker(clusterCheckEvery)
	defer tick.Stop()
	reason, _ := w.checkCluster(ctx)
	for {
		if reason != "" {
			w.opts.Logger.Warn("the cluster behind the API server changed: listing every type again and reporting what differs from what kubediff held", "reason", reason)
			w.relistAll(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			reason, _ = w.checkCluster(ctx)
		case reason = <-w.cluster.changed:
		}
	}
}

// checkBeforeResuming checks the cluster when the server answers again
// after an outage or a broken watch, before the watches resume: a
// cluster rebuilt meanwhile is known (and its records carry its
// identity) before any of its events is reported. followCluster says so
// and lists again. A check that could not reach the server returns its
// error: the watches keep waiting, and the next probe checks again.
func (w *Watcher) checkBeforeResuming(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	reason, err := w.checkCluster(ctx)
	if reason != "" {
		select {
		case w.cluster.changed <- reason:
		default: // a relist is already asked for
		}
	}
	if isConnectionError(err) {
		return err
	}
	return nil // not allowed to list namespaces, say: the watches go on unchecked
}

// checkCluster reads kube-system's UID and the server's current
// resourceVersion in one list request (list and watch are all kubediff's
// RBAC grants), and returns why the cluster changed ("" when it did not,
// or the list failed: err).
func (w *Watcher) checkCluster(ctx context.Context) (string, error) {
	w.cluster.checking.Lock()
	defer w.cluster.checking.Unlock()
	// Read before the list is asked for: every version seen so far was
	// written before the list, whose version (a consistent read) is then
	// at least as high, unless the cluster went back.
	seen := w.cluster.maxSeen.Load()
	list, err := w.dynamic.Resource(namespacesGVR).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=kube-system"})
	if err != nil {
		w.opts.Logger.Debug("cannot check the cluster's identity", "err", err)
		return "", err
	}
	current, _ := strconv.ParseUint(list.GetResourceVersion(), 10, 64)
	var uid string
	if len(list.Items) > 0 {
		uid = string(list.Items[0].GetUID())
	}
	reason := w.cluster.compare(uid, seen, current)
	if reason != "" {
		w.cluster.maxSeen.Store(current)
		if uid != "" {
			w.newCluster(uid)
		}
	}
	return reason, nil
}

// newCluster tells the journal and Options.OnNewCluster that the
// cluster behind the address is now the one whose kube-system has uid.
func (w *Watcher) newCluster(uid string) {
	if w.opts.Journal != nil {
		if err := w.opts.Journal.Rebind("kube-system/" + uid); err != nil {
			w.opts.Logger.Error("cannot record the new cluster in the state dir", "err", err)
		}
	}
	if w.opts.OnNewCluster != nil {
		w.opts.OnNewCluster(uid)
	}
}

// relistAll restarts every reflector over its store: each lists again,
// and the store reports what differs from what it held.
func (w *Watcher) relistAll(ctx context.Context) {
	w.mu.Lock()
	targets := slices.Collect(maps.Values(w.targets))
	w.mu.Unlock()
	for _, rt := range targets {
		rt.cancel()
		<-rt.done
		w.mu.Lock()
		if w.targets[rt.target.Key()] == rt && ctx.Err() == nil { // not stopped by a rediscovery meanwhile
			w.run(ctx, rt)
		}
		w.mu.Unlock()
	}
}

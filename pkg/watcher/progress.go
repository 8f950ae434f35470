package watcher

import (
	"context"
	"sort"
	"time"
)

// Progress describes how far the initial sync has come.
type Progress struct {
	Watches int // targets (type × namespace) watched
	Synced  int // targets whose initial list is in
	Failing int // targets not synced whose lists fail for a reason of their own, or bring nothing (stallAfter)
	Types   int // distinct types watched
	Objects int // objects cached, or received of an initial list, across all targets
	// Expected is how many objects there are in all, once every target
	// still syncing has said (CountUnsynced); 0 until then.
	Expected int
}

// Progress returns the current sync progress.
func (w *Watcher) Progress() Progress {
	w.mu.Lock()
	defer w.mu.Unlock()
	var p Progress
	now := time.Now()
	types := map[string]bool{}
	known := true
	for _, rt := range w.targets {
		p.Watches++
		types[rt.target.Resource.GVR.String()] = true
		if rt.store.HasSynced() {
			p.Synced++
			p.Objects += rt.store.Len()
			p.Expected += rt.store.Len()
			continue
		}
		if rt.health.stalled(rt.lw.received.Load(), now, w.lastListed()) {
			p.Failing++
		}
		p.Objects += int(rt.lw.received.Load())
		n := rt.lw.expected.Load()
		known = known && n >= 0
		p.Expected += int(n)
	}
	p.Types = len(types)
	if !known {
		p.Expected = 0
	}
	return p
}

// CountUnsynced asks the server how many objects each target still
// syncing has, so that Progress can say how many to expect: one small
// list per target, made only for a sync that takes a while. It gives up
// when the server stops answering.
func (w *Watcher) CountUnsynced(ctx context.Context) {
	w.mu.Lock()
	var unsynced []*listWatch
	for _, rt := range w.targets {
		if !rt.store.HasSynced() && rt.lw.expected.Load() < 0 {
			unsynced = append(unsynced, rt.lw)
		}
	}
	w.mu.Unlock()
	for _, lw := range unsynced {
		if !w.Connected() || ctx.Err() != nil {
			return
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		lw.count(ctx)
		cancel()
	}
}

// Unsynced names the targets whose cache has not synced yet.
func (w *Watcher) Unsynced() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, rt := range w.targets {
		if !rt.store.HasSynced() {
			out = append(out, rt.target.Resource.String()+"@"+rt.target.Namespace)
		}
	}
	sort.Strings(out)
	return out
}

// Failing names the targets whose lists or watches fail for a reason of
// their own (resource@namespace), with the last failure.
func (w *Watcher) Failing() []FailingTarget {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []FailingTarget
	for _, rt := range w.targets {
		if err, failing := rt.health.failing(); failing {
			out = append(out, FailingTarget{Resource: rt.target.Resource.String(), Namespace: rt.target.Namespace, Err: err})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// FailingTarget is a watched type (in a namespace, or "" for all) that
// cannot be listed or watched now, and why.
type FailingTarget struct{ Resource, Namespace, Err string }

func (f FailingTarget) String() string { return f.Resource + "@" + f.Namespace + ": " + f.Err }

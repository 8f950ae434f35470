package watcher

import (
	"sort"
	"time"
)

// Target states, as `kubediff resources --server` shows them.
const (
	StateSynced   = "synced"   // listed, and watching
	StateSyncing  = "syncing"  // its first list is under way
	StateRetrying = "retrying" // its list or watch fails; retried with backoff
)

// TargetState is one watched target's health: what a person asks of a
// running kubediff when a type seems quiet.
type TargetState struct {
	Resource  string    `json:"resource"` // resource.group, as kubectl names it
	Namespace string    `json:"namespace,omitempty"`
	State     string    `json:"state"`
	Error     string    `json:"error,omitempty"` // the last failure, while retrying
	Objects   int       `json:"objects"`         // cached, or received of the first list
	LastEvent time.Time `json:"lastEvent,omitzero"`
}

// States returns every watched target's health, by resource and namespace.
func (w *Watcher) States() []TargetState {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]TargetState, 0, len(w.targets))
	for _, rt := range w.targets {
		st := TargetState{Resource: rt.target.Resource.String(), Namespace: rt.target.Namespace, State: StateSyncing}
		switch err, failing := rt.health.failing(); {
		case failing:
			st.State, st.Error = StateRetrying, err
		case rt.store.HasSynced():
			st.State = StateSynced
		}
		if rt.store.HasSynced() {
			st.Objects = rt.store.Len()
		} else {
			st.Objects = int(rt.lw.received.Load())
		}
		if at := rt.store.lastEvent.Load(); at != 0 {
			st.LastEvent = time.Unix(0, at).UTC()
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Resource < out[j].Resource || out[i].Resource == out[j].Resource && out[i].Namespace < out[j].Namespace
	})
	return out
}

// WorseState is the state a type shows for several of its watches (one
// per namespace): retrying over syncing over synced.
func WorseState(a, b string) string {
	rank := map[string]int{"": 0, StateSynced: 1, StateSyncing: 2, StateRetrying: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

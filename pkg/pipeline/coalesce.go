package pipeline

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/kubediff/kubediff/pkg/record"
)

// Coalescing: a controller changes the objects it owns in quick steps (a
// rollout scales its ReplicaSets 10 → 8 → 5 → 3 → 0, a step per Pod
// ready), and the status of what it controls (a new Deployment's
// conditions appear, then Available turns True). Each step is a record a
// person does not need; the change from before the burst to after it is
// one. So updates of owned objects (those with a controller, record.Owner)
// and status-only updates are held briefly, and further updates of the
// same object merged into them: first value, last value.
const (
	// coalesceQuiet is how long an object must see no such update before
	// its merged record goes on. A rollout's steps, and a new Deployment's
	// conditions, come a Pod's readiness apart: measured on the living
	// cluster, 15 replica steps made 10 records at 1 s, 4 at 2 s, and a
	// Deployment's Available turned True 5.6 s after its first conditions.
	coalesceQuiet = 6 * time.Second
	// coalesceMax bounds how long any record is held, so a steadily
	// changing object is still reported every few seconds. The leader gate
	// settles records for longer than this (leader's settle), so a
	// takeover never skips a record that was held here.
	coalesceMax = 10 * time.Second
	// coalesceTick is how often held records are checked.
	coalesceTick = 200 * time.Millisecond
)

// coalescer holds and merges updates of owned objects. It is safe for
// concurrent use: every reflector's goroutine passes records through it.
type coalescer struct {
	emit func(record.Change)
	now  func() time.Time

	mu      sync.Mutex
	held    map[string]*heldRecord // by object UID
	stopped bool
}

type heldRecord struct {
	c           record.Change
	first, last time.Time
}

func newCoalescer(emit func(record.Change)) *coalescer {
	return &coalescer{emit: emit, now: time.Now, held: map[string]*heldRecord{}}
}

// add passes c on, or holds it to merge with what follows. Records of
// one object keep their order: anything but an update flushes that
// object's held record first.
func (co *coalescer) add(c record.Change) {
	co.mu.Lock()
	defer co.mu.Unlock()
	h := co.held[c.UID]
	if co.stopped || c.UID == "" || c.Type != record.Updated || (c.Owner == nil && !statusOnly(c)) || c.Patch != nil || c.Unified != "" {
		if h != nil {
			delete(co.held, c.UID)
			co.emit(h.c)
		}
		co.emit(c)
		return
	}
	now := co.now()
	if h == nil {
		co.held[c.UID] = &heldRecord{c: c, first: now, last: now}
		return
	}
	h.c, h.last = merge(h.c, c), now
}

// run flushes held records when they are due, and all of them when ctx
// is done; records added afterwards pass straight on.
func (co *coalescer) run(ctx context.Context) {
	tick := time.NewTicker(coalesceTick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			co.flush(func(*heldRecord) bool { return true })
			co.mu.Lock()
			co.stopped = true
			co.mu.Unlock()
			return
		case <-tick.C:
			now := co.now()
			co.flush(func(h *heldRecord) bool {
				return now.Sub(h.last) >= coalesceQuiet || now.Sub(h.first) >= coalesceMax
			})
		}
	}
}

// flush emits the held records due says are due, oldest first.
func (co *coalescer) flush(due func(*heldRecord) bool) {
	co.mu.Lock()
	defer co.mu.Unlock()
	var out []*heldRecord
	for uid, h := range co.held {
		if due(h) {
			out = append(out, h)
			delete(co.held, uid)
		}
	}
	for len(out) > 0 {
		oldest := 0
		for i, h := range out {
			if h.first.Before(out[oldest].first) {
				oldest = i
			}
		}
		if len(out[oldest].c.Changes) > 0 { // a burst that ended where it began says nothing
			co.emit(out[oldest].c)
		}
		out = append(out[:oldest], out[oldest+1:]...)
	}
}

// merge returns the record of a and then b, two updates of one object:
// b's identity and time, and for each field a's old value and b's new one.
// A field that came back to where it was drops out.
func merge(a, b record.Change) record.Change {
	byPath := map[string]int{}
	merged := make([]record.FieldChange, 0, len(a.Changes)+len(b.Changes))
	for _, fc := range a.Changes {
		byPath[fc.Path] = len(merged)
		merged = append(merged, fc)
	}
	for _, fc := range b.Changes {
		i, seen := byPath[fc.Path]
		if !seen {
			byPath[fc.Path] = len(merged)
			merged = append(merged, fc)
			continue
		}
		first := merged[i]
		m := record.FieldChange{Path: fc.Path, Field: fc.Field, From: first.From, To: fc.To}
		switch {
		case first.Op == record.OpAdd && fc.Op == record.OpRemove:
			m.Op = "" // added, then removed: nothing
		case first.Op == record.OpAdd:
			m.Op = record.OpAdd
		case fc.Op == record.OpRemove:
			m.Op, m.To = record.OpRemove, nil
		default:
			m.Op = record.OpReplace
		}
		merged[i] = m
	}
	out := b
	out.Changes = merged[:0]
	for _, fc := range merged {
		if fc.Op == "" || (fc.Op == record.OpReplace && reflect.DeepEqual(fc.From, fc.To)) {
			continue
		}
		out.Changes = append(out.Changes, fc)
	}
	out.Changed = record.Summarize(out.Changes)
	return out
}

// statusOnly reports whether every change of c is under /status: what a
// controller or kubelet reports, not what a person asked for.
func statusOnly(c record.Change) bool {
	for _, fc := range c.Changes {
		if fc.Path != "/status" && !strings.HasPrefix(fc.Path, "/status/") {
			return false
		}
	}
	return len(c.Changes) > 0
}

// Package fold groups a burst of records of objects one owner controls
// (a rollout's Pods and ReplicaSets) under the object that owns them all,
// so that people-facing sinks (text output, Slack) show what a person
// changed at once and in full, and what the controllers did in
// consequence once it has settled, as one counted line.
package fold

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kubediff/kubediff/pkg/record"
)

const (
	// Min is how many records of objects under one owner make a burst
	// worth folding: one or two (a Pod restarting) read better in full.
	Min = 3
	// Quiet is how long a burst must have been quiet before it is due. A
	// rollout's Pods go away a graceful deletion apart, often several
	// seconds (measured on the living cluster: up to ~7 s).
	Quiet = 10 * time.Second
	// Max bounds how long any record waits.
	Max = time.Minute
	// Tick is how often a sink should ask for due bursts.
	Tick = 500 * time.Millisecond
	// Ended is how long a rollout's burst waits once its Deployment says
	// the rollout ended, and after its last record: the pipeline releases
	// what it held of the rollout at that moment (pkg/pipeline), and those
	// records are on their way.
	Ended = 3 * time.Second
)

// Folder holds the records of owned objects in bursts, one per top owner.
// It is safe for concurrent use.
type Folder struct {
	now func() time.Time
	// outcome says how the top owner's rollout ended at a moment (nil:
	// not known): SetOutcome.
	outcome Outcome
	// live lets a rolled-out Deployment's burst wait for its old Pods
	// (settled). Live folding only: a replay's outcome is a history read,
	// which would be made for each open burst at each record.
	live bool

	mu sync.Mutex
	// owners maps an object ("Kind/namespace/name") to its owner's key,
	// learned from the records, so a Pod's records fold under the
	// Deployment that owns its ReplicaSet.
	owners map[string]string
	bursts map[string]*Burst // by top owner's key
	// folds remembers, for Max, each owner's last fold: the late steps of
	// a scale-down (a Pod's graceful deletion, seconds after the rest)
	// then say they continue it instead of printing alone.
	folds map[string]foldMark
	// ended is when each held rollout's Deployment was first seen to say
	// its rollout ended (settled).
	ended map[string]time.Time
}

// foldMark is an owner's last fold: its first record's time, when it was
// due, and whether it said the owner rolled out.
type foldMark struct {
	first     record.Timestamp
	due       time.Time
	rolledOut bool
}

// Burst is the records of the objects under one owner, with the Events
// about them (record.EventRecord).
type Burst struct {
	root        string // the top owner's key
	Records     []record.Change
	first, last time.Time
	// Continues is the first record's time of the owner's fold these
	// records came late to (zero: none).
	Continues record.Timestamp
	// Outcome says how the owner's rollout ended, when it did by the
	// time the burst is due: "rolled out 5/5", "stalled: FailedCreate: …"
	// ("": under way, or not known).
	Outcome string
	// Terminating is how many old Pods of a rolled-out Deployment were
	// still to go when the burst was due: their deletions, when they
	// come, are no news (Due keeps them to itself).
	Terminating int64
}

// Outcome says how the workload kind namespace/name's rollout stood at a
// moment (pkg/rollout): "" while it is under way or not known. The moment
// is when the burst settled, Quiet after its last record.
type Outcome func(kind, namespace, name string, at time.Time) string

// OutcomeSetter is a folding sink whose bursts can say how their owner's
// rollout ended.
type OutcomeSetter interface {
	SetOutcome(Outcome)
}

// SetOutcome makes due bursts say how their owner's rollout ended.
func (f *Folder) SetOutcome(o Outcome) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.outcome = o
}

// New returns an empty Folder for records as they come.
func New() *Folder {
	f := NewWithClock(time.Now)
	f.live = true
	return f
}

// NewWithClock returns an empty Folder that reads the time from now: a
// replay of kept records (kubediff history -o text) folds by the records'
// own times, as watch folded them when they came.
func NewWithClock(now func() time.Time) *Folder {
	return &Folder{now: now, owners: map[string]string{}, bursts: map[string]*Burst{}, folds: map[string]foldMark{}, ended: map[string]time.Time{}}
}

// Add holds c in its top owner's burst and reports true, or reports false
// for a record of an object without an owner, to be shown at once.
func (f *Folder) Add(c record.Change) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.Owner != nil {
		self := objectKey(c.Kind, c.Namespace, c.Name)
		f.owners[self] = objectKey(c.Owner.Kind, c.Namespace, c.Owner.Name)
		f.regroup(self, f.root(c))
	}
	root := f.root(c)
	if root == "" && c.Type == record.EventRecord && f.bursts[objectKey(c.Kind, c.Namespace, c.Name)] != nil {
		root = objectKey(c.Kind, c.Namespace, c.Name) // about the owner of a burst: under it
	}
	if c.Type == record.Deleted {
		delete(f.owners, objectKey(c.Kind, c.Namespace, c.Name)) // the map stays as small as the cluster
	}
	if root == "" {
		if c.Type != record.EventRecord && !(c.Type == record.Updated && record.StatusOnly(c.Changes)) {
			// The owner itself changed (an upgrade after an install):
			// what its controllers do next is a new burst, not late
			// steps of the last one. Its status moving is no change.
			delete(f.folds, objectKey(c.Kind, c.Namespace, c.Name))
		}
		return false
	}
	b := f.bursts[root]
	if b == nil {
		b = &Burst{root: root, first: f.now()}
		f.bursts[root] = b
	}
	b.Records, b.last = append(b.Records, c), f.now()
	return true
}

// regroup moves the burst held under self, an object just learned to be
// owned, into its top owner's burst: a rollout's Pods often come before
// the record that says their ReplicaSet is the Deployment's, and would
// otherwise fold in two lines at two levels. The caller holds mu.
func (f *Folder) regroup(self, root string) {
	b := f.bursts[self]
	if b == nil || root == self {
		return
	}
	delete(f.bursts, self)
	into := f.bursts[root]
	if into == nil {
		b.root = root
		f.bursts[root] = b
		return
	}
	into.Records = append(into.Records, b.Records...)
	slices.SortStableFunc(into.Records, func(x, y record.Change) int { return time.Time(x.Time).Compare(time.Time(y.Time)) })
	into.first = minTime(into.first, b.first)
	into.last = maxTime(into.last, b.last)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Due removes and returns, oldest first, the bursts that have settled
// (quiet for Quiet, or waiting for Max), or every burst with all. A
// burst of an owner folded within Max continues that fold; one that is
// only the tail of a rollout the fold said ended is not returned.
func (f *Folder) Due(all bool) []*Burst {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	var due []*Burst
	for root, b := range f.bursts {
		if all || now.Sub(b.first) >= Max || f.settled(b, now) {
			b.Outcome = f.outcomeOf(b)
			if f.live && strings.HasPrefix(b.Outcome, "rolled out") {
				b.Terminating = max(0, b.podsToGo())
			}
			due = append(due, b)
			delete(f.bursts, root)
			delete(f.ended, root)
		}
	}
	slices.SortFunc(due, func(a, b *Burst) int { return a.first.Compare(b.first) })
	for root, m := range f.folds {
		if now.Sub(m.due) >= Max {
			delete(f.folds, root)
		}
	}
	return slices.DeleteFunc(due, func(b *Burst) bool { return f.markFold(b, now) })
}

// markFold remembers b's fold for the late steps of its owner, and
// reports whether b is only the tail of a rollout its owner's fold said
// ended, to be kept from sinks. The caller holds mu.
func (f *Folder) markFold(b *Burst, now time.Time) (tail bool) {
	m, ok := f.folds[b.root]
	if ok {
		b.Continues = m.first
		if m.rolledOut && b.rolloutTail() {
			return true
		}
	}
	if b.Folded() {
		f.folds[b.root] = foldMark{first: cmp.Or(b.Continues, b.First()), due: now, rolledOut: strings.HasPrefix(b.Outcome, "rolled out")}
	}
	return false
}

// rolloutTail reports whether b's records are all the last steps of a
// rollout that ended: its ReplicaSets' updates (the old one's last
// scale-down, which the Deployment controller may make after it says the
// rollout is complete, and status), its Pods' updates and deletions (the
// old Pods terminating), Events that are no warning. A Pod added, a
// warning, or any other object is news. The owner's own change (a new
// rollout, a scale) ends the fold first (Add), so its steps are never a
// tail.
func (b *Burst) rolloutTail() bool {
	for _, c := range b.Records {
		switch {
		case c.Type == record.EventRecord && c.Event != nil && !c.Event.Warning():
		case c.Kind == "Pod" && (c.Type == record.Deleted || c.Type == record.Updated):
		case c.Kind == "ReplicaSet" && c.Type == record.Updated:
		default:
			return false
		}
	}
	return true
}

// OpenSince is when the oldest burst still held began (its first
// record's time), and whether one is held.
func (f *Folder) OpenSince() (record.Timestamp, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var oldest record.Timestamp
	for _, b := range f.bursts {
		if first := b.First(); time.Time(oldest).IsZero() || time.Time(first).Before(time.Time(oldest)) {
			oldest = first
		}
	}
	return oldest, !time.Time(oldest).IsZero()
}

// Waiting reports whether any burst is held.
func (f *Folder) Waiting() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bursts) > 0
}

// root returns the key of the object at the top of c's owners, or "" for
// an object without one. The caller holds mu.
func (f *Folder) root(c record.Change) string {
	if c.Owner == nil {
		return ""
	}
	key := objectKey(c.Owner.Kind, c.Namespace, c.Owner.Name)
	for range 10 { // ownership chains are short; never loop
		next, ok := f.owners[key]
		if !ok {
			break
		}
		key = next
	}
	return key
}

// outcomeOf says how b's owner's rollout ended: as the owner says, or,
// while it says it is under way, stalled on the last warning about its
// objects. The caller holds mu.
func (f *Folder) outcomeOf(b *Burst) string {
	if f.outcome == nil {
		return ""
	}
	kind, name := b.Owner()
	namespace, name, found := strings.Cut(name, "/")
	if !found {
		namespace, name = "", namespace
	}
	// At the moment the burst settles, as watch reads it when it prints.
	if o := f.outcome(kind, namespace, name, time.Time(b.Last()).Add(Quiet)); o != "" {
		return o
	}
	if w := b.Events(); len(w) > 0 && w[len(w)-1].Event.Warning() {
		e := w[len(w)-1].Event
		return "stalled: " + e.Reason + ": " + e.Message
	}
	return ""
}

// settled reports whether b has had its steps: quiet for Quiet, or, for
// a Deployment's rollout (a burst with a ReplicaSet's record), once its
// Deployment has said for Ended that it rolled out and no record came
// meanwhile. That is when the pipeline released what it held of the
// rollout; old Pods still terminating are counted (Terminating), not
// waited for. The caller holds mu.
func (f *Folder) settled(b *Burst, now time.Time) bool {
	kind, name := b.Owner()
	if !f.live || f.outcome == nil || kind != "Deployment" ||
		!slices.ContainsFunc(b.Records, func(c record.Change) bool { return c.Kind == "ReplicaSet" }) {
		return now.Sub(b.last) >= Quiet
	}
	namespace, name, _ := strings.Cut(name, "/")
	if !strings.HasPrefix(f.outcome(kind, namespace, name, now), "rolled out") {
		// Under way, or stalled: its warnings keep coming, each
		// backoff apart, and read best under the one line.
		delete(f.ended, b.root)
		return now.Sub(b.last) >= Quiet
	}
	since, seen := f.ended[b.root]
	if !seen {
		f.ended[b.root] = now
		return false
	}
	return now.Sub(since) >= Ended && now.Sub(b.last) >= Ended
}

// podsToGo is how many Pods the burst's ReplicaSet scale-downs remove
// that it has no deletion of yet: a rollout whose Deployment says it
// rolled out still has old Pods terminating, whose deletions come later.
func (b *Burst) podsToGo() int64 {
	var n int64
	for _, c := range b.Records {
		switch {
		case c.Kind == "ReplicaSet" && c.Type == record.Updated:
			for _, fc := range c.Changes {
				from, fromOK := count(fc.From)
				to, toOK := count(fc.To)
				if fc.Path == "/spec/replicas" && fromOK && toOK && to < from {
					n += from - to
				}
			}
		case c.Kind == "Pod" && c.Type == record.Deleted:
			n--
		}
	}
	return n
}

// count reads a replica count as a record carries it: int64 as diffed,
// float64 as decoded from JSON (a kept record).
func count(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case float64:
		return int64(n), true
	}
	return 0, false
}

// Folded reports whether the burst shows as one line: enough changes
// (Events are shown under it apart), late steps of its owner's fold, or
// a rollout that says old Pods are still terminating (their deletions
// then print no line of their own).
func (b *Burst) Folded() bool {
	if b.Terminating > 0 {
		return true
	}
	n := 0
	for _, c := range b.Records {
		if c.Type != record.EventRecord {
			n++
		}
	}
	return n >= Min || n > 0 && !time.Time(b.Continues).IsZero()
}

// Events returns the Events about the burst's objects, once per object
// and reason (the last said), in the order they first came.
func (b *Burst) Events() []record.Change {
	var out []record.Change
	for _, c := range b.Records {
		if c.Type != record.EventRecord || c.Event == nil {
			continue
		}
		i := slices.IndexFunc(out, func(o record.Change) bool {
			return o.Kind == c.Kind && o.Namespace == c.Namespace && o.Name == c.Name && o.Event.Reason == c.Event.Reason
		})
		if i < 0 {
			out = append(out, c)
			continue
		}
		out[i] = c
	}
	return out
}

// Owner is the top owner's kind and name (namespace/name): "Deployment",
// "day/web".
func (b *Burst) Owner() (kind, name string) {
	kind, name, _ = strings.Cut(b.root, "/")
	return kind, strings.TrimPrefix(name, "/")
}

// Summary counts, per kind, the records of the objects under the owner:
// "Pod 10 added, 10 deleted; ReplicaSet 1 added, 2 updated (spec.replicas)".
func (b *Burst) Summary() string {
	type tally struct {
		byType map[string]int
		fields []string
	}
	var kinds []string
	tallies := map[string]*tally{}
	for _, c := range b.Records {
		if c.Type == record.EventRecord {
			continue // shown apart (Events)
		}
		t := tallies[c.Kind]
		if t == nil {
			t = &tally{byType: map[string]int{}}
			tallies[c.Kind] = t
			kinds = append(kinds, c.Kind)
		}
		t.byType[c.Type]++
		for _, fc := range c.Changes {
			if !slices.Contains(t.fields, fc.Field) && len(t.fields) < 3 {
				t.fields = append(t.fields, fc.Field)
			}
		}
	}
	var parts []string
	for _, kind := range kinds {
		t := tallies[kind]
		var counts []string
		for _, typ := range []string{record.Added, record.Updated, record.Deleted} {
			if n := t.byType[typ]; n > 0 {
				s := fmt.Sprintf("%d %s", n, typ)
				if typ == record.Updated && len(t.fields) > 0 {
					s += " (" + strings.Join(t.fields, ", ") + ")"
				}
				counts = append(counts, s)
			}
		}
		parts = append(parts, kind+" "+strings.Join(counts, ", "))
	}
	return strings.Join(parts, "; ")
}

// First is when the burst's first step happened (its earliest record).
func (b *Burst) First() record.Timestamp {
	first := b.Records[0].Time
	for _, c := range b.Records[1:] {
		if time.Time(c.Time).Before(time.Time(first)) {
			first = c.Time
		}
	}
	return first
}

// Headline is the Summary, then how the rollout ended when it did:
// "ReplicaSet 1 added; Pod 2 added; stalled: FailedCreate: …".
func (b *Burst) Headline() string {
	parts := []string{b.Summary()}
	if b.Outcome != "" {
		parts = append(parts, b.Outcome)
	}
	switch {
	case b.Terminating == 1:
		parts = append(parts, "1 old Pod terminating")
	case b.Terminating > 1:
		parts = append(parts, fmt.Sprintf("%d old Pods terminating", b.Terminating))
	}
	return strings.Join(parts, "; ")
}

// EventLines are the Events about the burst's objects, a line each for
// people: "ReplicaSet web-5d: Warning FailedCreate: … (×3)".
func (b *Burst) EventLines() []string {
	var out []string
	for _, c := range b.Events() {
		out = append(out, c.Kind+" "+c.Name+": "+c.Event.String())
	}
	return out
}

// Last is when the burst's last record was observed.
func (b *Burst) Last() record.Timestamp { return b.Records[len(b.Records)-1].Time }

func objectKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// Ticker calls a sink's tick every Tick from its own goroutine, started
// by the first Start, so a sink built and never used (a run that fails to
// start) leaves nothing running. Its zero value is ready to use.
type Ticker struct {
	mu     sync.Mutex
	cancel context.CancelFunc // nil until started
	done   chan struct{}
}

// Start starts calling tick, unless it was started already. tick's ctx
// ends with Stop.
func (t *Ticker) Start(tick func(ctx context.Context)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.cancel, t.done = cancel, make(chan struct{})
	go func() {
		defer close(t.done)
		tk := time.NewTicker(Tick)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
				tick(ctx)
			}
		}
	}()
}

// Stop stops the calls and waits for one under way.
func (t *Ticker) Stop() {
	t.mu.Lock()
	cancel, done := t.cancel, t.done
	t.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

package stdout

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kubediff/kubediff/pkg/record"
)

const (
	// foldMin is how many records of objects under one owner make a
	// burst worth folding: one or two (a Pod restarting) read better in
	// full.
	foldMin = 3
	// foldQuiet is how long a burst must have been quiet before it
	// prints. A rollout's Pods go away a graceful deletion apart, often
	// several seconds (measured on the living cluster: up to ~7 s).
	foldQuiet = 10 * time.Second
	// foldMax bounds how long any record waits.
	foldMax = time.Minute
	// foldTick is how often waiting bursts are checked.
	foldTick = 500 * time.Millisecond
)

// FoldingText is the text sink folding a burst of owned objects' records
// (a rollout's Pods and ReplicaSets) into one line under the object that
// owns them all: what a person changed prints at once and in full, what
// the controllers did in consequence prints once it has settled, counted.
// Records of objects without an owner print at once; those of owned
// objects wait until their owner's burst has been quiet for foldQuiet,
// and then print in full if there are fewer than foldMin.
type FoldingText struct {
	text    *Sink
	palette palette
	now     func() time.Time

	mu sync.Mutex
	// owners maps an object ("Kind/namespace/name") to its owner's key,
	// learned from the records, so a Pod's records fold under the
	// Deployment that owns its ReplicaSet.
	owners map[string]string
	bursts map[string]*burst // by top owner's key
	// The timer goroutine starts with the first burst, so a sink built
	// and never used (a run that fails to start) leaves nothing running.
	running bool
	stop    chan struct{}
	done    chan struct{}
}

type burst struct {
	records     []record.Change
	first, last time.Time
}

// NewFoldingText returns a text sink that folds owned objects' records.
// Close stops its timer and prints what waits.
func NewFoldingText(w io.Writer, color bool) *FoldingText {
	p := palette{}
	if color {
		p = ansiPalette
	}
	return &FoldingText{text: NewText(w, color), palette: p, now: time.Now, owners: map[string]string{},
		bursts: map[string]*burst{}, stop: make(chan struct{}), done: make(chan struct{})}
}

// Notify implements notify.Notifier.
func (f *FoldingText) Notify(_ context.Context, c record.Change) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.Owner != nil {
		f.owners[objectKey(c.Kind, c.Namespace, c.Name)] = objectKey(c.Owner.Kind, c.Namespace, c.Owner.Name)
	}
	root := f.root(c)
	if c.Type == record.Deleted {
		delete(f.owners, objectKey(c.Kind, c.Namespace, c.Name)) // the map stays as small as the cluster
	}
	if root == "" {
		if err := f.text.encode(f.text.w, c); err != nil {
			return err
		}
		return f.text.w.Flush()
	}
	if !f.running {
		f.running = true
		go f.run()
	}
	b := f.bursts[root]
	if b == nil {
		b = &burst{first: f.now()}
		f.bursts[root] = b
	}
	b.records, b.last = append(b.records, c), f.now()
	return nil
}

// Close implements notify.Closer: it prints every waiting burst.
func (f *FoldingText) Close() error {
	f.mu.Lock()
	running := f.running
	f.mu.Unlock()
	if running {
		close(f.stop)
		<-f.done
	}
	return f.print(func(*burst) bool { return true })
}

func (f *FoldingText) run() {
	defer close(f.done)
	tick := time.NewTicker(foldTick)
	defer tick.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-tick.C:
			now := f.now()
			_ = f.print(func(b *burst) bool { return now.Sub(b.last) >= foldQuiet || now.Sub(b.first) >= foldMax })
		}
	}
}

// print writes the bursts due says are due, oldest first.
func (f *FoldingText) print(due func(*burst) bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var roots []string
	for root, b := range f.bursts {
		if due(b) {
			roots = append(roots, root)
		}
	}
	slices.SortFunc(roots, func(a, b string) int { return f.bursts[a].first.Compare(f.bursts[b].first) })
	for _, root := range roots {
		b := f.bursts[root]
		delete(f.bursts, root)
		if len(b.records) >= foldMin {
			f.writeFold(f.text.w, root, b.records)
			continue
		}
		for _, c := range b.records {
			if err := f.text.encode(f.text.w, c); err != nil {
				return err
			}
		}
	}
	return f.text.w.Flush()
}

// root returns the key of the object at the top of c's owners, or "" for
// an object without one.
func (f *FoldingText) root(c record.Change) string {
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

// writeFold writes one line counting, per kind, the records of the
// objects under root: "Deployment day/web: Pod 10 added, 10 deleted;
// ReplicaSet 1 added, 2 updated (spec.replicas)".
func (f *FoldingText) writeFold(w *bufio.Writer, root string, cs []record.Change) {
	type tally struct {
		byType map[string]int
		fields []string
	}
	var kinds []string
	tallies := map[string]*tally{}
	for _, c := range cs {
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
	kind, name, _ := strings.Cut(root, "/")
	p := f.palette
	fmt.Fprintf(w, "%s%s%s %s%-7s%s %s%s %s%s: %s\n", p.dim, cs[len(cs)-1].Time, p.reset, p.dim, "owned", p.reset,
		p.bold, kind, strings.TrimPrefix(name, "/"), p.reset, strings.Join(parts, "; "))
}

func objectKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

package stdout

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/kubediff/kubediff/pkg/record"
)

// foldMin is how many records of objects under one owner a batch must
// hold before they are folded into one line: one or two (a Pod restarting)
// read better in full.
const foldMin = 3

// maxFoldBatch bounds a batch; the queue lingers to gather a burst.
const maxFoldBatch = 1000

// FoldingText is the text sink folding a burst of owned objects' records
// (a rollout's Pods and ReplicaSets) into one line under the object that
// owns them all: what a person made change shows in full, what the
// controllers did in consequence is counted. It takes batches; give its
// queue a Linger so that a burst arrives as one.
type FoldingText struct {
	*Sink
	palette palette
	// owners maps an object ("Kind/namespace/name") to its owner's key,
	// learned from the records, so a Pod's records fold under the
	// Deployment that owns its ReplicaSet.
	owners map[string]string
}

// NewFoldingText returns a text sink that folds owned objects' records.
func NewFoldingText(w io.Writer, color bool) *FoldingText {
	p := palette{}
	if color {
		p = ansiPalette
	}
	return &FoldingText{Sink: NewText(w, color), palette: p, owners: map[string]string{}}
}

// MaxBatch implements notify.BatchNotifier.
func (f *FoldingText) MaxBatch() int { return maxFoldBatch }

// Notify implements notify.Notifier.
func (f *FoldingText) Notify(ctx context.Context, c record.Change) error {
	return f.NotifyBatch(ctx, []record.Change{c})
}

// NotifyBatch implements notify.BatchNotifier: records print in order,
// except that the records of each owner's objects, when there are at least
// foldMin, print as one line where the first of them came.
func (f *FoldingText) NotifyBatch(_ context.Context, cs []record.Change) error {
	groups := map[string][]record.Change{}
	for _, c := range cs {
		if c.Owner != nil {
			f.owners[objectKey(c.Kind, c.Namespace, c.Name)] = objectKey(c.Owner.Kind, c.Namespace, c.Owner.Name)
		}
	}
	for _, c := range cs {
		if root := f.root(c); root != "" {
			groups[root] = append(groups[root], c)
		}
	}
	printed := map[string]bool{}
	for _, c := range cs {
		root := f.root(c)
		if root == "" || len(groups[root]) < foldMin {
			if err := f.encode(f.w, c); err != nil {
				return err
			}
			continue
		}
		if !printed[root] {
			printed[root] = true
			f.writeFold(f.w, root, groups[root])
		}
	}
	if deleted := deletedKeys(cs); len(deleted) > 0 {
		for _, k := range deleted { // forget what is gone, so the map stays small
			delete(f.owners, k)
		}
	}
	return f.w.Flush()
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
// ReplicaSet 1 added, 4 updated (spec.replicas)".
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

func deletedKeys(cs []record.Change) []string {
	var out []string
	for _, c := range cs {
		if c.Type == record.Deleted {
			out = append(out, objectKey(c.Kind, c.Namespace, c.Name))
		}
	}
	return out
}

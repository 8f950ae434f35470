package stdout

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/kubediff/kubediff/pkg/notify/fold"
	"github.com/kubediff/kubediff/pkg/record"
)

// FoldingText is the text sink folding a burst of owned objects' records
// (a rollout's Pods and ReplicaSets) into one line under the object that
// owns them all (see pkg/notify/fold): what a person changed prints at
// once and in full, what the controllers did in consequence prints once
// it has settled, counted, or in full when it is only a record or two.
type FoldingText struct {
	text    *Sink
	palette palette
	folder  *fold.Folder

	mu     sync.Mutex // orders writes from Notify and the timer
	ticker fold.Ticker

	// replay folds kept records by their own times (clock), printing a
	// burst once a later record shows it settled, with no timer.
	replay bool
	clock  time.Time
}

// NewFoldingText returns a text sink that folds owned objects' records.
// Close stops its timer and prints what waits.
func NewFoldingText(w io.Writer, color bool) *FoldingText {
	p := palette{}
	if color {
		p = ansiPalette
	}
	return &FoldingText{text: NewText(w, color), palette: p, folder: fold.New()}
}

// NewReplayText returns a text sink that folds records already kept, in
// their order, as watch folded them when they came: by the records' own
// times, so a burst settles when a record after its quiet time comes, and
// the rest when Close is called.
func NewReplayText(w io.Writer, color bool) *FoldingText {
	f := NewFoldingText(w, color)
	f.replay = true
	f.folder = fold.NewWithClock(func() time.Time { return f.clock })
	return f
}

// Notify implements notify.Notifier.
func (f *FoldingText) Notify(_ context.Context, c record.Change) error {
	if f.replay {
		f.clock = time.Time(c.Time)
		if err := f.print(false); err != nil { // what settled before c
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.folder.Add(c) {
		if err := f.text.encode(f.text.w, c); err != nil {
			return err
		}
		return f.text.flush()
	}
	if !f.replay {
		f.ticker.Start(func(context.Context) { _ = f.print(false) })
	}
	return nil
}

// SetOutcome makes a folded burst say how its owner's rollout ended.
func (f *FoldingText) SetOutcome(o fold.Outcome) { f.folder.SetOutcome(o) }

// Close implements notify.Closer: it prints every waiting burst.
func (f *FoldingText) Close() error {
	f.ticker.Stop()
	return f.print(true)
}

// print writes the bursts that are due (all of them with all), oldest
// first.
func (f *FoldingText) print(all bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range f.folder.Due(all) {
		if b.Folded() {
			kind, name := b.Owner()
			p := f.palette
			summary := b.Headline()
			fmt.Fprintf(f.text.w, "%s%s%s %s%-7s%s %s%s %s%s: %s\n", p.dim, b.Last(), p.reset, p.dim, "owned", p.reset,
				p.bold, printable(kind), printable(name), p.reset, printable(summary))
			for _, e := range b.Events() {
				fmt.Fprintf(f.text.w, "  %s\n", eventLine(e, p))
			}
			continue
		}
		for _, c := range b.Records {
			if err := f.text.encode(f.text.w, c); err != nil {
				return err
			}
		}
	}
	return f.text.flush()
}

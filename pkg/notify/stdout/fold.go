package stdout

import (
	"context"
	"fmt"
	"io"
	"slices"
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
	// burst once a later record shows it settled, with no timer, where
	// its first step happened: what came after that step waits in
	// pending until the burst prints.
	replay  bool
	clock   time.Time
	pending []pendingLine

	// newest is the newest time a line printed so far stands for: a
	// burst's records printed in full once it settled are older, and say
	// what they belong to.
	newest time.Time
}

// pendingLine is a burst or a record waiting to print at its time.
type pendingLine struct {
	at     time.Time
	burst  *fold.Burst
	record record.Change
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
		if since, open := f.folder.OpenSince(); f.replay && open && time.Time(since).Before(time.Time(c.Time)) {
			f.pending = append(f.pending, pendingLine{at: time.Time(c.Time), record: c})
			return nil
		}
		f.newest = latest(f.newest, time.Time(c.Time))
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

// print writes the bursts that are due (all of them with all), each at
// its first step's time, and in a replay the records waiting behind them
// up to the oldest burst still open.
func (f *FoldingText) print(all bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range f.folder.Due(all) {
		f.pending = append(f.pending, pendingLine{at: time.Time(b.First()), burst: b})
	}
	slices.SortStableFunc(f.pending, func(a, b pendingLine) int { return a.at.Compare(b.at) })
	cutoff, open := f.folder.OpenSince()
	n := 0
	for _, line := range f.pending {
		if f.replay && open && !line.at.Before(time.Time(cutoff)) {
			break
		}
		if err := f.write(line); err != nil {
			return err
		}
		n++
	}
	f.pending = slices.Delete(f.pending, 0, n)
	return f.text.flush()
}

// write prints one record, or a burst: folded as one line stamped with
// its first step and saying its span (or the fold it came late to), else
// its records, each saying the owner it waited under when lines of later
// moments were printed meanwhile.
func (f *FoldingText) write(line pendingLine) error {
	b := line.burst
	switch {
	case b == nil:
		f.newest = latest(f.newest, time.Time(line.record.Time))
		return f.text.encode(f.text.w, line.record)
	case !b.Folded():
		kind, name := b.Owner()
		for _, c := range b.Records {
			note := ""
			if c.Type != record.EventRecord && time.Time(c.Time).Before(f.newest) {
				note = "(late: waited under " + printable(kind) + " " + printable(name) + " until it settled)"
			}
			if err := encodeText(f.text.w, c, f.palette, note); err != nil {
				return err
			}
		}
		f.newest = latest(f.newest, time.Time(b.Last()))
		return nil
	}
	f.newest = latest(f.newest, time.Time(b.Last()))
	kind, name := b.Owner()
	p := f.palette
	when := span(b)
	if when != "" {
		when = " " + p.dim + "(" + when + ")" + p.reset
	}
	if _, err := fmt.Fprintf(f.text.w, "%s%s%s %s%-7s%s %s%s %s%s: %s%s\n", p.dim, b.First(), p.reset, p.dim, "owned", p.reset,
		p.bold, printable(kind), printable(name), p.reset, printable(b.Headline()), when); err != nil {
		return err
	}
	for _, e := range b.Events() {
		if _, err := fmt.Fprintf(f.text.w, "  %s\n", eventLine(e, p)); err != nil {
			return err
		}
	}
	return nil
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// span says when a folded burst's steps happened after its first: until
// when, or which earlier fold of the same owner its late steps belong to
// ("": all at once).
func span(b *fold.Burst) string {
	first, last := time.Time(b.First()), time.Time(b.Last())
	switch {
	case !time.Time(b.Continues).IsZero():
		return fmt.Sprintf("late steps of the fold at %s", b.Continues)
	case last.After(first):
		return fmt.Sprintf("until %s, %s", b.Last(), last.Sub(first).Round(time.Millisecond))
	}
	return ""
}

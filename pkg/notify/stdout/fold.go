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

	mu sync.Mutex // orders writes from Notify and the timer
	// The timer goroutine starts with the first burst, so a sink built
	// and never used (a run that fails to start) leaves nothing running.
	running bool
	stop    chan struct{}
	done    chan struct{}
}

// NewFoldingText returns a text sink that folds owned objects' records.
// Close stops its timer and prints what waits.
func NewFoldingText(w io.Writer, color bool) *FoldingText {
	p := palette{}
	if color {
		p = ansiPalette
	}
	return &FoldingText{text: NewText(w, color), palette: p, folder: fold.New(), stop: make(chan struct{}), done: make(chan struct{})}
}

// Notify implements notify.Notifier.
func (f *FoldingText) Notify(_ context.Context, c record.Change) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.folder.Add(c) {
		if err := f.text.encode(f.text.w, c); err != nil {
			return err
		}
		return f.text.w.Flush()
	}
	if !f.running {
		f.running = true
		go f.run()
	}
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
	return f.print(true)
}

func (f *FoldingText) run() {
	defer close(f.done)
	tick := time.NewTicker(fold.Tick)
	defer tick.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-tick.C:
			_ = f.print(false)
		}
	}
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
			fmt.Fprintf(f.text.w, "%s%s%s %s%-7s%s %s%s %s%s: %s\n", p.dim, b.Last(), p.reset, p.dim, "owned", p.reset,
				p.bold, kind, name, p.reset, b.Summary())
			continue
		}
		for _, c := range b.Records {
			if err := f.text.encode(f.text.w, c); err != nil {
				return err
			}
		}
	}
	return f.text.w.Flush()
}

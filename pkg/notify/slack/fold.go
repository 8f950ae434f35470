package slack

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/kubediff/kubediff/pkg/notify/fold"
	"github.com/kubediff/kubediff/pkg/record"
)

// closeTimeout bounds how long Close may take to post what waits.
const closeTimeout = 10 * time.Second

// retryFolds is how long a burst that failed to post waits before the
// next try.
const retryFolds = 5 * time.Second

// Folding is the Slack sink folding a burst of owned objects' records (a
// rollout's Pods and ReplicaSets) into one line under the object that
// owns them all, posted once the burst has settled (see pkg/notify/fold):
// a channel shows what a person changed at once and in full, and what the
// controllers did in consequence as one counted line. A burst of only a
// record or two is posted in full.
//
// Folded records are held by the sink, not by its queue: a burst not yet
// posted when kubediff is killed is lost from the channel (a SIGTERM posts
// it). The JSON stream and webhooks carry every record.
type Folding struct {
	*Sink
	folder *fold.Folder
	log    *slog.Logger

	ticker fold.Ticker
	// failed are bursts whose post failed, retried from the timer. Only
	// the timer uses these, and Close once it has stopped.
	failed  []*fold.Burst
	retryAt time.Time
	failing bool
}

// NewFolding wraps sink with folding.
func NewFolding(sink *Sink, log *slog.Logger) *Folding {
	return &Folding{Sink: sink, folder: fold.New(), log: log}
}

// Notify implements notify.Notifier.
func (f *Folding) Notify(ctx context.Context, c record.Change) error {
	return f.NotifyBatch(ctx, []record.Change{c})
}

// NotifyBatch posts the records of objects without an owner at once, and
// holds the others in their owner's burst. Owned records are held only
// once the rest is posted, so a batch retried after a failure does not
// hold them twice.
func (f *Folding) NotifyBatch(ctx context.Context, cs []record.Change) error {
	var now, owned []record.Change
	for _, c := range cs {
		if c.Owner != nil {
			owned = append(owned, c)
		} else {
			now = append(now, c)
		}
	}
	if len(now) > 0 {
		if err := f.Sink.NotifyBatch(ctx, now); err != nil {
			return err
		}
	}
	for _, c := range owned {
		f.folder.Add(c)
	}
	if len(owned) > 0 {
		f.ticker.Start(f.tick)
	}
	return nil
}

// Close implements notify.Closer: it posts every waiting burst.
func (f *Folding) Close() error {
	f.ticker.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	bursts := append(f.failed, f.folder.Due(true)...)
	f.failed = nil
	return f.post(ctx, bursts)
}

// tick posts the bursts that are due, and retries those that failed.
func (f *Folding) tick(ctx context.Context) {
	bursts := f.folder.Due(false)
	if len(f.failed) > 0 && time.Now().After(f.retryAt) {
		bursts, f.failed = append(f.failed, bursts...), nil
	}
	if len(bursts) == 0 {
		return
	}
	err := f.post(ctx, bursts)
	switch {
	case err != nil && ctx.Err() == nil:
		f.failed, f.retryAt = append(f.failed, bursts...), time.Now().Add(retryFolds)
		if !f.failing {
			f.log.Warn("slack: cannot post folded records: retrying", "err", err)
		}
		f.failing = true
	case err != nil:
		f.failed = append(f.failed, bursts...) // stopping: Close posts them
	case f.failing:
		f.failing = false
		f.log.Info("slack: folded records posted again")
	}
}

// post posts bursts, as many sections per message as Slack's limits
// allow: a folded burst as one, a small one as its records.
func (f *Folding) post(ctx context.Context, bursts []*fold.Burst) error {
	var sections []section
	for _, b := range bursts {
		if !b.Folded() {
			for _, c := range b.Records {
				sections = append(sections, recordSection(c))
			}
			continue
		}
		kind, name := b.Owner()
		title := fmt.Sprintf("owned %s %s", kind, name)
		sections = append(sections, section{
			text:  "*" + escape(title) + "*\n" + escape(truncate(b.Summary(), maxSectionText-len(title)-10)),
			title: title + ": " + b.Summary(),
		})
	}
	for len(sections) > 0 {
		n := min(len(sections), maxBatch)
		blocks, fallback := message(sections[:n])
		if err := f.Sink.post(ctx, blocks, fallback); err != nil {
			return err
		}
		sections = sections[n:]
	}
	return nil
}

package fold

import (
	"context"
	"log/slog"
	"time"

	"github.com/kubediff/kubediff/pkg/record"
)

// closeTimeout bounds how long Close may take to post what waits.
const closeTimeout = 10 * time.Second

// retryFolds is how long a burst that failed to post waits before the
// next try.
const retryFolds = 5 * time.Second

// Poster is a people-facing sink a Sink folds for: it posts records as
// they are, and bursts (a folded one as one line, a small one as its
// records).
type Poster interface {
	PostRecords(ctx context.Context, cs []record.Change) error
	PostBursts(ctx context.Context, bursts []*Burst) error
}

// Sink folds for a Poster: records of objects without an owner are
// posted at once and in full; those of owned objects wait in their top
// owner's burst and are posted once it has settled (Quiet), a burst of
// Min or more as one counted line.
//
// Folded records are held by the sink, not by its queue: a burst not yet
// posted when kubediff is killed is lost from the channel (a SIGTERM posts
// it). The JSON stream and webhooks carry every record.
type Sink struct {
	poster Poster
	name   string // for the log: "slack", "webhook teams"
	folder *Folder
	log    *slog.Logger

	ticker Ticker
	// failed are bursts whose post failed, retried from the timer. Only
	// the timer uses these, and Close once it has stopped.
	failed  []*Burst
	retryAt time.Time
	failing bool
}

// NewSink folds for poster; name says which sink in the log.
func NewSink(poster Poster, name string, log *slog.Logger) *Sink {
	return &Sink{poster: poster, name: name, folder: New(), log: log}
}

// NotifyBatch posts the records of objects without an owner at once, and
// holds the others in their owner's burst. Owned records are held only
// once the rest is posted, so a batch retried after a failure does not
// hold them twice.
func (f *Sink) NotifyBatch(ctx context.Context, cs []record.Change) error {
	var now, owned []record.Change
	for _, c := range cs {
		if c.Owner != nil {
			owned = append(owned, c)
		} else {
			now = append(now, c)
		}
	}
	if len(now) > 0 {
		if err := f.poster.PostRecords(ctx, now); err != nil {
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

// SetOutcome makes folded bursts say how their owner's rollout ended.
func (f *Sink) SetOutcome(o Outcome) { f.folder.SetOutcome(o) }

// Notify posts or holds one record.
func (f *Sink) Notify(ctx context.Context, c record.Change) error {
	return f.NotifyBatch(ctx, []record.Change{c})
}

// Close posts every waiting burst.
func (f *Sink) Close() error {
	f.ticker.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	bursts := append(f.failed, f.folder.Due(true)...)
	f.failed = nil
	if len(bursts) == 0 {
		return nil
	}
	return f.poster.PostBursts(ctx, bursts)
}

// tick posts the bursts that are due, and retries those that failed.
func (f *Sink) tick(ctx context.Context) {
	bursts := f.folder.Due(false)
	if len(f.failed) > 0 && time.Now().After(f.retryAt) {
		bursts, f.failed = append(f.failed, bursts...), nil
	}
	if len(bursts) == 0 {
		return
	}
	err := f.poster.PostBursts(ctx, bursts)
	switch {
	case err != nil && ctx.Err() == nil:
		f.failed, f.retryAt = append(f.failed, bursts...), time.Now().Add(retryFolds)
		if !f.failing {
			f.log.Warn(f.name+": cannot post folded records: retrying", "err", err)
		}
		f.failing = true
	case err != nil:
		f.failed = append(f.failed, bursts...) // stopping: Close posts them
	case f.failing:
		f.failing = false
		f.log.Info(f.name + ": folded records posted again")
	}
}

package webhook

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/kubediff/kubediff/pkg/notify/fold"
	"github.com/kubediff/kubediff/pkg/notify/visible"
	"github.com/kubediff/kubediff/pkg/record"
)

// FoldingChat is a chat preset's sink folding a controller's burst (a
// rollout's Pods and ReplicaSets) into one line under the object that
// owns them all, posted once it has settled, as the Slack sink does
// (pkg/notify/fold): a channel shows what a person changed at once and in
// full, and what the controllers did in consequence as one counted line.
type FoldingChat struct {
	*fold.Sink
	chat *Chat
}

// NewFoldingChat wraps chat with folding.
func NewFoldingChat(chat *Chat, log *slog.Logger) *FoldingChat {
	f := &FoldingChat{chat: chat}
	f.Sink = fold.NewSink(f, "webhook "+chat.opts.Format, log)
	return f
}

// MaxBatch implements notify.BatchNotifier.
func (f *FoldingChat) MaxBatch() int { return f.chat.MaxBatch() }

// PostRecords implements fold.Poster.
func (f *FoldingChat) PostRecords(ctx context.Context, cs []record.Change) error {
	return f.chat.NotifyBatch(ctx, cs)
}

// PostBursts implements fold.Poster: a folded burst is one section, a
// small one its records'.
func (f *FoldingChat) PostBursts(ctx context.Context, bursts []*fold.Burst) error {
	var secs []Section
	var ids []string
	for _, b := range bursts {
		for _, c := range b.Records {
			ids = append(ids, c.ID)
		}
		if !b.Folded() {
			for _, c := range b.Records {
				secs = append(secs, recordSection(c))
			}
			continue
		}
		kind, name := b.Owner()
		secs = append(secs, Section{
			Title: cut(visible.String(fmt.Sprintf("owned %s %s", kind, name)), maxTitle),
			Lines: burstLines(b),
		})
	}
	return f.chat.postSections(ctx, secs, batchKey(ids))
}

// burstLines are a folded burst's summary, with how the rollout ended,
// and a line per Event about its objects.
func burstLines(b *fold.Burst) []string {
	var lines []string
	for _, line := range append([]string{b.Headline()}, b.EventLines()...) {
		lines = append(lines, cut(visible.String(line), maxChatDetail))
	}
	return lines
}

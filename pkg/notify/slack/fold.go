package slack

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/kubediff/kubediff/pkg/notify/fold"
	"github.com/kubediff/kubediff/pkg/record"
)

// Folding is the Slack sink folding a burst of owned objects' records (a
// rollout's Pods and ReplicaSets) into one line under the object that
// owns them all, posted once the burst has settled (see pkg/notify/fold):
// a channel shows what a person changed at once and in full, and what the
// controllers did in consequence as one counted line. A burst of only a
// record or two is posted in full.
type Folding struct {
	*fold.Sink
	sink *Sink
}

// NewFolding wraps sink with folding.
func NewFolding(sink *Sink, log *slog.Logger) *Folding {
	f := &Folding{sink: sink}
	f.Sink = fold.NewSink(f, "slack", log)
	return f
}

// MaxBatch implements notify.BatchNotifier.
func (f *Folding) MaxBatch() int { return f.sink.MaxBatch() }

// PostRecords implements fold.Poster.
func (f *Folding) PostRecords(ctx context.Context, cs []record.Change) error {
	return f.sink.NotifyBatch(ctx, cs)
}

// PostBursts implements fold.Poster.
func (f *Folding) PostBursts(ctx context.Context, bursts []*fold.Burst) error {
	return f.post(ctx, bursts)
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
		summary := strings.Join(append([]string{b.Headline()}, b.EventLines()...), "\n")
		sections = append(sections, section{
			text:  "*" + mrkdwn(title, maxTitle) + "*\n" + mrkdwn(summary, maxSectionText-maxTitle-10),
			title: title + ": " + b.Summary(),
		})
	}
	return f.sink.postSections(ctx, sections)
}

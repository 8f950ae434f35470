package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/record"
)

// Chat is a webhook sink with a chat preset that posts the records
// waiting in its queue as one message (a burst reads as one post, and
// stays under the service's rate limit), as the Slack sink does.
type Chat struct{ *Sink }

// NewChat returns a sink posting opts.Format's chat messages, or an error
// when opts.Format is not a chat preset.
func NewChat(opts Options) (*Chat, error) {
	s, err := New(opts)
	if err != nil {
		return nil, err
	}
	if s.preset == nil {
		return nil, fmt.Errorf("format: %q is not a chat preset", opts.Format)
	}
	return &Chat{s}, nil
}

// MaxBatch implements notify.BatchNotifier.
func (c *Chat) MaxBatch() int { return c.preset.maxBatch }

// NotifyBatch implements notify.BatchNotifier.
func (c *Chat) NotifyBatch(ctx context.Context, cs []record.Change) error {
	secs := make([]Section, len(cs))
	ids := make([]string, len(cs))
	for i, r := range cs {
		secs[i], ids[i] = recordSection(r), r.ID
	}
	return c.postSections(ctx, secs, batchKey(ids))
}

// batchKey is the Idempotency-Key of a message about several records:
// the record's id for one, else a digest of the ids, the same when the
// same batch is retried.
func batchKey(ids []string) string {
	if len(ids) == 1 {
		return ids[0]
	}
	sum := sha256.Sum256([]byte(strings.Join(ids, "\n")))
	return "batch-" + hex.EncodeToString(sum[:16])
}

// postSections renders sections as the preset's messages and posts
// them, at most one per the service's interval. A failure after the
// first of several messages retries them all: a chat may show one twice,
// never lose one.
func (s *Sink) postSections(ctx context.Context, secs []Section, key string) error {
	bodies, err := s.preset.render(secs)
	if err != nil {
		return err // final: the same records would not fit another time
	}
	for i, body := range bodies {
		if err := s.limiter.Wait(ctx); err != nil {
			return notify.Transient(fmt.Errorf("webhook %s: %w", s.safeURL, err))
		}
		k := key
		if len(bodies) > 1 {
			k = fmt.Sprintf("%s-%d", key, i+1)
		}
		if err := s.post(ctx, body, s.preset.contentType, k); err != nil {
			return err
		}
	}
	return nil
}

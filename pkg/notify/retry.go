package notify

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff is the retry policy for transient failures.
type Backoff struct {
	// Initial is the first wait; each next one doubles, up to Max.
	Initial, Max time.Duration
	// Jitter spreads each wait by up to this fraction either way, so
	// replicas and sinks do not retry in lockstep.
	Jitter float64
}

// DefaultBackoff retries after ~0.5 s, 1 s, 2 s, … up to 30 s between tries.
var DefaultBackoff = Backoff{Initial: 500 * time.Millisecond, Max: 30 * time.Second, Jitter: 0.2}

// retry calls try until it succeeds, fails permanently, or ctx is done.
// A receiver's Retry-After is waited exactly; other transient failures wait
// with exponential backoff and jitter. onRetry is told of each retry.
func (b Backoff) retry(ctx context.Context, try func(context.Context) error, onRetry func(err error, wait time.Duration)) error {
	wait := b.Initial
	for {
		err := try(ctx)
		if err == nil {
			return nil
		}
		transient, after := IsTransient(err)
		if !transient {
			return err
		}
		d := after
		if d <= 0 {
			d = b.jittered(wait)
			wait = min(wait*2, b.Max)
		}
		if onRetry != nil {
			onRetry(err, d)
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

func (b Backoff) jittered(d time.Duration) time.Duration {
	if b.Jitter <= 0 {
		return d
	}
	f := 1 + b.Jitter*(2*rand.Float64()-1)
	return time.Duration(float64(d) * f)
}

package notify

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/kubediff/kubediff/pkg/record"
)

// Backoff is a retry policy.
type Backoff struct {
	// Initial is the first wait; each next one doubles, up to Max.
	Initial, Max time.Duration
	// Jitter spreads each wait by up to this fraction either way, so
	// replicas and sinks do not retry in lockstep.
	Jitter float64
}

// DefaultBackoff retries transient failures after ~0.5 s, 1 s, 2 s, … up
// to 30 s between tries.
var DefaultBackoff = Backoff{Initial: 500 * time.Millisecond, Max: 30 * time.Second, Jitter: 0.2}

// DefaultAuthBackoff retries a sink whose credentials are refused after
// ~10 s, 20 s, 40 s, then once a minute: a credential rotated a moment
// late is picked up soon, delivery resumes within about a minute of an
// operator's fix, and meanwhile the receiver sees one request a minute.
var DefaultAuthBackoff = Backoff{Initial: 10 * time.Second, Max: time.Minute, Jitter: 0.2}

// retry calls try until it succeeds, fails permanently, or ctx is done.
// A receiver's Retry-After is waited exactly; refused credentials wait on
// the auth policy, other transient failures on the transient one, each
// backing off on its own. onRetry is told of each retry.
func retry(ctx context.Context, transient, auth Backoff, try func(context.Context) error, onRetry func(err error, wait time.Duration)) error {
	waits := [2]time.Duration{transient.Initial, auth.Initial}
	for {
		err := try(ctx)
		if err == nil {
			return nil
		}
		ok, d := IsTransient(err)
		if !ok {
			return err
		}
		if d <= 0 {
			policy, i := transient, 0
			if IsAuthFailure(err) {
				policy, i = auth, 1
			}
			d = policy.jittered(waits[i])
			waits[i] = min(waits[i]*2, policy.Max)
		}
		onRetry(err, d)
		if !sleep(ctx, d) {
			return err
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

// sleep waits d, or until ctx is done; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// episode is a run of failed deliveries to one sink, logged when it
// starts and when it ends, never per retry or per record. Only Run's
// goroutine uses it.
type episode struct {
	since    time.Time
	retrying bool   // transient failures logged
	refused  bool   // refused credentials logged
	retries  uint64 // in this episode
	rejected uint64 // records given up on as final, in this episode
}

// deliver sends batch, retrying what may succeed until ctx is done, and
// counts and logs the outcome. It reports whether the queue is done with
// the batch: delivered, or rejected and given up on. False means ctx
// ended first (the drain at shutdown): a spooled queue keeps the batch
// for the next start, a queue in memory drops and counts it, as it does
// the records still queued behind it.
func (d *delivery) deliver(ctx context.Context, batcher BatchNotifier, batch []record.Change) bool {
	err := retry(ctx, d.opts.Backoff, d.opts.AuthBackoff, func(ctx context.Context) error {
		if batcher != nil {
			return batcher.NotifyBatch(ctx, batch)
		}
		return d.sink.Notify(ctx, batch[0])
	}, func(err error, wait time.Duration) { d.retrying(err, wait, len(batch)) })
	n := uint64(len(batch))
	switch {
	case err == nil:
		d.healed()
		d.delivered.Add(n)
		return true
	case ctx.Err() != nil:
		return false
	}
	d.reject(err, batch)
	return true
}

// retrying logs a failure that will be retried if it starts an episode,
// or if it is the episode's first refusal of credentials: only an
// operator can fix that, and a sink going from 503 to 401 must say so.
func (d *delivery) retrying(err error, wait time.Duration, records int) {
	d.retries.Add(1)
	e := &d.failure
	if e.since.IsZero() {
		e.since = time.Now()
	}
	e.retries++
	switch {
	case IsAuthFailure(err) && !e.refused:
		e.refused, e.retrying = true, true
		d.opts.Log.Error("sink failing: its credentials are refused; records are kept and retried slowly until they are accepted",
			"sink", d.name, "retryEvery", d.opts.AuthBackoff.Max.String(), "err", err)
	case !e.retrying:
		e.retrying = true
		d.opts.Log.Warn("sink failing: retrying until it delivers", "sink", d.name, "err", err)
	}
	d.opts.Log.Debug("delivery failed, retrying", "sink", d.name, "records", records, "retryIn", wait.Round(time.Millisecond).String(), "err", err)
}

// reject counts a batch the receiver refused for good (a 400: the
// record, not the sink, is at fault, and trying again cannot help). The
// first of an episode is logged with the record and the receiver's
// reason; the rest are counted until a delivery ends the episode.
func (d *delivery) reject(err error, batch []record.Change) {
	d.failed.Add(uint64(len(batch)))
	e := &d.failure
	if e.since.IsZero() {
		e.since = time.Now()
	}
	if e.rejected == 0 {
		d.opts.Log.Error("sink rejected records: not retried; more are counted until one is delivered",
			append(batch[0].LogAttrs(), "sink", d.name, "records", len(batch), "err", err)...)
	} else {
		d.opts.Log.Debug("sink rejected records", append(batch[0].LogAttrs(), "sink", d.name, "records", len(batch), "err", err)...)
	}
	e.rejected += uint64(len(batch))
}

// healed ends an episode with one line saying what it cost.
func (d *delivery) healed() {
	e := d.failure
	if e.since.IsZero() {
		return
	}
	attrs := []any{"sink", d.name, "after", time.Since(e.since).Round(time.Millisecond).String()}
	if e.retries > 0 {
		attrs = append(attrs, "retries", e.retries)
	}
	if e.rejected > 0 {
		attrs = append(attrs, "rejected", e.rejected)
	}
	d.opts.Log.Info("sink delivering again", attrs...)
	d.failure = episode{}
}

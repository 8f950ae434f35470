// Package notify delivers change records to sinks. A sink implements
// Notifier and only moves bytes; what every sink needs (its own bounded
// queue, retries with backoff, routing by match rules, counters) wraps it
// here, the way Alertmanager's notify package stages its integrations.
package notify

import (
	"context"
	"errors"
	"time"

	"github.com/kubediff/kubediff/pkg/record"
)

// Notifier delivers records to one destination.
type Notifier interface {
	// Notify delivers c. Return an error from Transient or RetryAfter when
	// trying again may succeed, from AuthFailure when the receiver refuses
	// kubediff's credentials; any other error is final.
	Notify(ctx context.Context, c record.Change) error
}

// BatchNotifier is a Notifier that can deliver several records at once
// (Slack: one message for a burst of records instead of one per second).
type BatchNotifier interface {
	Notifier
	// MaxBatch is how many records one NotifyBatch call may take.
	MaxBatch() int
	// NotifyBatch delivers records in order, all or none.
	NotifyBatch(ctx context.Context, cs []record.Change) error
}

// Closer is a Notifier that holds records a while (text output folding a
// burst): its queue calls Close once every record was handed to it, and
// Close writes what it still holds.
type Closer interface {
	Notifier
	Close() error
}

// NotifierFunc adapts a function to Notifier.
type NotifierFunc func(ctx context.Context, c record.Change) error

// Notify implements Notifier.
func (f NotifierFunc) Notify(ctx context.Context, c record.Change) error { return f(ctx, c) }

// transientError marks a failure that may succeed if tried again.
type transientError struct {
	err        error
	retryAfter time.Duration // exactly how long to wait, when the receiver said so
	auth       bool          // credentials refused: AuthFailure
}

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

// Transient marks err as worth retrying (a timeout, a refused connection, a
// 5xx answer).
func Transient(err error) error { return &transientError{err: err} }

// RetryAfter marks err as worth retrying after exactly d, as a 429 answer's
// Retry-After header says.
func RetryAfter(err error, d time.Duration) error {
	return &transientError{err: err, retryAfter: d}
}

// AuthFailure marks err as the receiver refusing kubediff's credentials
// or access (HTTP 401 or 403, Slack's invalid_auth or token_revoked, gRPC
// Unauthenticated or PermissionDenied). An operator fixes that (a token
// expired, rotated or revoked), and every record until then would fail
// alike: the queue keeps them and retries slowly (QueueOptions.
// AuthBackoff), rather than dropping each as final.
func AuthFailure(err error) error { return &transientError{err: err, auth: true} }

// IsTransient reports whether err may succeed if tried again (a
// transient failure or an AuthFailure), and how long the receiver asked
// to wait (0 when it did not say).
func IsTransient(err error) (bool, time.Duration) {
	var te *transientError
	if errors.As(err, &te) {
		return true, te.retryAfter
	}
	return false, 0
}

// IsAuthFailure reports whether err is an AuthFailure.
func IsAuthFailure(err error) bool {
	var te *transientError
	return errors.As(err, &te) && te.auth
}

// Package notify delivers change records to sinks. A sink implements
// Notifier; behaviour shared by all sinks (queueing, and later retry,
// metrics and routing) wraps a Notifier instead of living inside it.
package notify

import (
	"context"
	"errors"

	"github.com/kubediff/kubediff/pkg/diff"
)

// Notifier delivers one record to one destination.
type Notifier interface {
	// Notify delivers c. An error wrapping ErrTransient may succeed if
	// tried again; any other error will not.
	Notify(ctx context.Context, c diff.Change) error
}

// NotifierFunc adapts a function to Notifier.
type NotifierFunc func(ctx context.Context, c diff.Change) error

// Notify implements Notifier.
func (f NotifierFunc) Notify(ctx context.Context, c diff.Change) error { return f(ctx, c) }

// ErrTransient marks failures worth retrying (timeouts, 5xx, 429).
var ErrTransient = errors.New("transient failure")

package app

import (
	"context"
	"log/slog"

	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/identity"
)

// identitySource starts one source of who made each change when cfg
// configures it, noting each write it sees; stop ends it. A source not
// configured returns a stop that does nothing.
type identitySource func(ctx context.Context, cfg config.Config, notes identity.Noter, log *slog.Logger) (stop func(), err error)

// identitySources are every source kubediff knows (docs/identity.md).
var identitySources = []identitySource{startAuditWebhook, startAuditLog, startAdmissionObserver}

// startIdentitySources starts every configured source; a source that
// cannot start (a port taken, a certificate missing) fails the run.
func startIdentitySources(ctx context.Context, cfg config.Config, notes identity.Noter, log *slog.Logger) (stop func(), err error) {
	var stops []func()
	stopAll := func() {
		for _, s := range stops {
			s()
		}
	}
	for _, start := range identitySources {
		s, err := start(ctx, cfg, notes, log)
		if err != nil {
			stopAll()
			return nil, err
		}
		stops = append(stops, s)
	}
	return stopAll, nil
}

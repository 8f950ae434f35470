package app

import (
	"context"
	"errors"
	"log/slog"

	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/identity"
	"github.com/kubediff/kubediff/pkg/identity/audit"
	"github.com/kubediff/kubediff/pkg/identity/auditlog"
	"github.com/kubediff/kubediff/pkg/identity/auditwebhook"
)

// auditOptions says what of a request beyond its user a write carries.
func auditOptions(cfg config.Config) audit.Options {
	return audit.Options{UserAgent: cfg.Identity.UserAgent, SourceIP: cfg.Identity.SourceIP}
}

// startAuditWebhook serves the API server's audit webhook backend when
// audit.webhook.address is set.
func startAuditWebhook(_ context.Context, cfg config.Config, notes identity.Noter, log *slog.Logger) (func(), error) {
	w := cfg.Audit.Webhook
	if w.Address == "" {
		return func() {}, nil
	}
	s, err := auditwebhook.Start(auditwebhook.Config{Address: w.Address, CertFile: w.CertFile, KeyFile: w.KeyFile,
		ClientCAFile: w.ClientCAFile, TokenFile: w.TokenFile, Options: auditOptions(cfg)}, notes, log)
	if err != nil {
		return nil, err
	}
	return s.Stop, nil
}

// startAuditLog follows the API server's audit log when audit.log.path is
// set.
func startAuditLog(_ context.Context, cfg config.Config, notes identity.Noter, log *slog.Logger) (func(), error) {
	if cfg.Audit.Log.Path == "" {
		return func() {}, nil
	}
	stop, err := auditlog.Follow(cfg.Audit.Log.Path, auditOptions(cfg), notes, log)
	if errors.Is(err, auditlog.ErrNotRegular) {
		// A FIFO or a device named as the log is the user's mistake: exit 2.
		return nil, ConfigError{err}
	}
	return stop, err
}

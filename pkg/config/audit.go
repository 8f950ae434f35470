package config

import (
	"errors"
	"fmt"
)

// check checks the audit sources: the webhook needs its serving
// certificate and a way to know the API server, since anyone who can
// reach its port could otherwise post events naming anyone.
func (a AuditConfig) check() []error {
	var errs []error
	w := a.Webhook
	if w.Address == "" {
		for _, f := range []struct{ key, value string }{{"certFile", w.CertFile}, {"keyFile", w.KeyFile}, {"clientCAFile", w.ClientCAFile}, {"tokenFile", w.TokenFile}} {
			if f.value != "" {
				errs = append(errs, fmt.Errorf("audit.webhook.%s is set but audit.webhook.address (--audit-webhook-address) is not: the webhook is not served", f.key))
			}
		}
		return errs
	}
	if err := checkHTTPAddress(w.Address); err != nil {
		errs = append(errs, fmt.Errorf("audit.webhook.address (--audit-webhook-address): %w", err))
	}
	if w.CertFile == "" || w.KeyFile == "" {
		errs = append(errs, errors.New("audit.webhook.address (--audit-webhook-address) needs audit.webhook.certFile and audit.webhook.keyFile (--audit-webhook-cert-file, --audit-webhook-key-file): the API server posts over TLS"))
	}
	if w.ClientCAFile == "" && w.TokenFile == "" {
		errs = append(errs, errors.New("audit.webhook.address (--audit-webhook-address) needs audit.webhook.clientCAFile or audit.webhook.tokenFile (--audit-webhook-client-ca-file, --audit-webhook-token-file): without them anyone reaching the port could post events"))
	}
	return errs
}

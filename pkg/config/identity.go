package config

import (
	"errors"
	"fmt"
	"time"
)

// DefaultIdentityWait is how long a record may wait for a source to say
// who made it (docs/identity.md: audit webhook batches come about a
// second apart).
const DefaultIdentityWait = 2 * time.Second

// AuditConfig names the API server's audit trail as a source of who made
// each change (pkg/identity, docs/identity.md).
type AuditConfig struct {
	// Webhook serves the API server's audit webhook backend.
	Webhook AuditWebhookConfig `mapstructure:"webhook"`
	// Log follows an audit log file the API server writes.
	Log AuditLogConfig `mapstructure:"log"`
}

// AuditWebhookConfig is kubediff's end of the API server's audit webhook
// backend (--audit-webhook-config-file points at it).
type AuditWebhookConfig struct {
	// Address is host:port served over TLS; empty: not served.
	Address string `mapstructure:"address"`
	// CertFile and KeyFile are the serving certificate and key.
	CertFile string `mapstructure:"certFile"`
	KeyFile  string `mapstructure:"keyFile"`
	// ClientCAFile, when set, admits only clients whose certificate it
	// signed; TokenFile, when set, admits only requests bearing the token
	// it holds. At least one is required: nobody else may post events.
	ClientCAFile string `mapstructure:"clientCAFile"`
	TokenFile    string `mapstructure:"tokenFile"`
}

// AuditLogConfig follows an audit log file.
type AuditLogConfig struct {
	// Path is the file the API server writes (--audit-log-path); empty:
	// not followed.
	Path string `mapstructure:"path"`
}

// AdmissionObserverConfig serves a validating admission webhook that
// always allows and notes who sent each write: the source for clusters
// whose audit backend cannot be configured.
type AdmissionObserverConfig struct {
	// Address is host:port served over TLS; empty: not served.
	Address  string `mapstructure:"address"`
	CertFile string `mapstructure:"certFile"`
	KeyFile  string `mapstructure:"keyFile"`
	// ClientCAFile and TokenFile are how the API server proves it is the
	// caller (a client certificate the CA signed; the token, as a bearer
	// token or the registration path's last segment): one is required.
	ClientCAFile string `mapstructure:"clientCAFile"`
	TokenFile    string `mapstructure:"tokenFile"`
}

// IdentityConfig says how records learn who made them.
type IdentityConfig struct {
	// Wait bounds how long a record waits for its identity when a source
	// is configured; a record whose identity has not come by then goes
	// on without a user. 0: records never wait, and are named only when
	// the source spoke first (the admission observer always does).
	Wait time.Duration `mapstructure:"wait"`
	// UserAgent and SourceIP add the request's user agent and source
	// addresses to each record's user.
	UserAgent bool `mapstructure:"userAgent"`
	SourceIP  bool `mapstructure:"sourceIP"`
}

// IdentitySources reports whether any source of identity is configured.
func (c Config) IdentitySources() bool {
	return c.Audit.Webhook.Address != "" || c.Audit.Log.Path != "" || c.AdmissionObserver.Address != ""
}

// checkIdentity checks the identity settings.
func (c Config) checkIdentity() []error {
	var errs []error
	if c.Identity.Wait < 0 || c.Identity.Wait > time.Minute {
		errs = append(errs, fmt.Errorf("identity.wait (--identity-wait): %s is not between 0 and 1m", c.Identity.Wait))
	}
	if c.IdentitySources() && (len(c.Contexts) > 1 || c.AllContexts) {
		errs = append(errs, errors.New("audit and admissionObserver: a source of who made each change serves one cluster; run one kubediff per cluster to use one"))
	}
	errs = append(errs, c.Audit.check()...)
	errs = append(errs, c.AdmissionObserver.check()...)
	return errs
}

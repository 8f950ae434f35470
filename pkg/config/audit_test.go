package config

import (
	"strings"
	"testing"
)

func TestAuditWebhookNeedsTLSAndAWayToKnowTheAPIServer(t *testing.T) {
	full := AuditWebhookConfig{Address: ":9443", CertFile: "tls.crt", KeyFile: "tls.key", ClientCAFile: "ca.crt"}
	for _, tc := range []struct {
		name string
		edit func(*AuditWebhookConfig)
		want string // empty: valid
	}{
		{"a client CA", func(*AuditWebhookConfig) {}, ""},
		{"a token", func(w *AuditWebhookConfig) { w.ClientCAFile, w.TokenFile = "", "token" }, ""},
		{"not served", func(w *AuditWebhookConfig) { *w = AuditWebhookConfig{} }, ""},
		{"no certificate", func(w *AuditWebhookConfig) { w.CertFile = "" }, "needs audit.webhook.certFile and audit.webhook.keyFile"},
		{"no key", func(w *AuditWebhookConfig) { w.KeyFile = "" }, "needs audit.webhook.certFile and audit.webhook.keyFile"},
		{"nobody to trust", func(w *AuditWebhookConfig) { w.ClientCAFile = "" }, "needs audit.webhook.clientCAFile or audit.webhook.tokenFile"},
		{"not host:port", func(w *AuditWebhookConfig) { w.Address = "9443" }, "audit.webhook.address (--audit-webhook-address): \"9443\" is not host:port"},
		{"files without an address", func(w *AuditWebhookConfig) { w.Address = "" }, "audit.webhook.certFile is set but audit.webhook.address (--audit-webhook-address) is not"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.Audit.Webhook = full
			tc.edit(&c.Audit.Webhook)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want no error", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

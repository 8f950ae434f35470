// Package callerauth tells the API server from anyone else who reaches
// one of kubediff's identity endpoints (the audit webhook, the admission
// observer): a caller is believed only with a client certificate a
// configured CA signed, or a configured token. Both endpoints name users
// from what is posted, so an unauthenticated post could name anyone.
package callerauth

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// Files are where the client CA and the token are; either may be empty.
// Keys name the config keys (and flags) that set them, for errors.
type Files struct {
	ClientCAFile, TokenFile       string
	ClientCAFileKey, TokenFileKey string
}

// Checker authenticates requests against a client CA and a token.
type Checker struct {
	hasCA bool
	token [sha256.Size]byte // of the token file's token; zero: no token
}

// Load reads the client CA into c's TLS config (a certificate offered
// must verify; a token may stand in for one) and the token. Its errors
// name the key at fault.
func Load(f Files, c *tls.Config) (*Checker, error) {
	ch := &Checker{}
	if f.ClientCAFile != "" {
		pem, err := os.ReadFile(f.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.ClientCAFileKey, err)
		}
		c.ClientCAs = x509.NewCertPool()
		if !c.ClientCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s %s holds no PEM certificate", f.ClientCAFileKey, f.ClientCAFile)
		}
		c.ClientAuth, ch.hasCA = tls.VerifyClientCertIfGiven, true
	}
	if f.TokenFile != "" {
		b, err := os.ReadFile(f.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.TokenFileKey, err)
		}
		token := strings.TrimSpace(string(b))
		if token == "" {
			return nil, fmt.Errorf("%s %s is empty", f.TokenFileKey, f.TokenFile)
		}
		ch.token = sha256.Sum256([]byte(token))
	}
	return ch, nil
}

// Configured reports whether any way of authenticating is set.
func (ch *Checker) Configured() bool {
	return ch.hasCA || ch.HasToken()
}

// HasToken reports whether a token is set.
func (ch *Checker) HasToken() bool { return ch.token != [sha256.Size]byte{} }

// Authenticated reports whether r bears a certificate the client CA
// verified, or the token as a bearer token.
func (ch *Checker) Authenticated(r *http.Request) bool {
	if ch.hasCA && r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		return true
	}
	bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && ch.IsToken(strings.TrimSpace(bearer))
}

// IsToken reports whether s is the token. Hashes have one length: the
// comparison takes the same time whatever s is, and says nothing of the
// token's length.
func (ch *Checker) IsToken(s string) bool {
	if !ch.HasToken() || s == "" {
		return false
	}
	got := sha256.Sum256([]byte(s))
	return subtle.ConstantTimeCompare(got[:], ch.token[:]) == 1
}

// Package auditwebhook serves the API server's audit webhook backend
// (--audit-webhook-config-file points at it): the API server posts
// batches of audit events, and each write they record is noted with who
// sent it. Only the API server may post: every request needs a client
// certificate the configured CA signed or the configured bearer token.
//
// The API server's batching backend sends from a buffer and retries a
// failed batch with backoff, so a slow or absent kubediff never slows
// its requests; kubediff in turn answers at once, handing the writes to a
// queue that a slow Noter cannot make the handler wait on.
package auditwebhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/kubediff/kubediff/pkg/identity"
	"github.com/kubediff/kubediff/pkg/identity/audit"
	"github.com/kubediff/kubediff/pkg/identity/callerauth"
)

// Source names the writes this source notes.
const Source = "audit-webhook"

// DefaultMaxBodyBytes bounds a posted batch: the API server's default
// batch is at most 400 events, and the policy in deploy/audit omits
// managedFields, so a batch of ordinary objects is a few MiB.
const DefaultMaxBodyBytes = 64 << 20

// queueSize is how many writes may wait for the Noter before new ones
// are dropped (and counted) rather than holding up the API server.
const queueSize = 10000

// Config is where and how the server listens (config.AuditWebhookConfig).
type Config struct {
	Address, CertFile, KeyFile, ClientCAFile, TokenFile string
	Options                                             audit.Options
	// Window is how long audit IDs are remembered against replays (0:
	// audit.DefaultWindow); MaxBodyBytes bounds a post (0: the default).
	Window       time.Duration
	MaxBodyBytes int64
}

// Server is a running audit webhook backend.
type Server struct {
	cfg    Config
	auth   *callerauth.Checker
	window *audit.Window
	queue  *queue
	refuse *refusals
	srv    *http.Server
	addr   string
	log    *slog.Logger
}

// Start listens on cfg.Address over TLS and notes the writes of every
// accepted post until Stop. Its errors name the config key at fault.
func Start(cfg Config, notes identity.Noter, log *slog.Logger) (*Server, error) {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	s := &Server{cfg: cfg, window: audit.NewWindow(cfg.Window), log: log, refuse: &refusals{log: log}}
	tlsConfig, err := s.tlsConfig()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Address)
	if err != nil {
		return nil, fmt.Errorf("audit.webhook.address %s: %w", cfg.Address, err)
	}
	s.addr = ln.Addr().String()
	s.queue = startQueue(notes, log)
	s.srv = &http.Server{Handler: s, TLSConfig: tlsConfig, ReadHeaderTimeout: 10 * time.Second,
		// The API server sends a few short headers; a stranger's 1 MB of
		// them (Go's default) is refused before it is held.
		MaxHeaderBytes: maxHeaderBytes, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)} // handshakes of scanners are no news
	go func() {
		if err := s.srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("audit webhook server stopped", "address", s.addr, "err", err)
		}
	}()
	log.Info("serving the API server's audit webhook backend", "address", s.addr)
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.addr }

// Stop stops serving and noting.
func (s *Server) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	s.queue.stop()
}

// tlsConfig loads the serving certificate, the client CA and the token.
func (s *Server) tlsConfig() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(s.cfg.CertFile, s.cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("audit.webhook.certFile %s and keyFile %s: %w", s.cfg.CertFile, s.cfg.KeyFile, err)
	}
	c := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	s.auth, err = callerauth.Load(callerauth.Files{
		ClientCAFile: s.cfg.ClientCAFile, ClientCAFileKey: "audit.webhook.clientCAFile",
		TokenFile: s.cfg.TokenFile, TokenFileKey: "audit.webhook.tokenFile",
	}, c)
	return c, err
}

// ServeHTTP takes one batch of audit events.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "the audit webhook takes POST only", http.StatusMethodNotAllowed)
		return
	}
	if !s.authenticated(r) {
		s.refuse.note(r)
		http.Error(w, "unauthenticated: only the API server may post audit events here", http.StatusUnauthorized)
		return
	}
	writes, err := audit.DecodeList(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes), Source, s.cfg.Options)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		s.log.Warn("refused an audit batch over the size bound", "address", s.addr, "limit", tooLarge.Limit)
		http.Error(w, "audit batch too large", http.StatusRequestEntityTooLarge)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.admit(writes)
	w.WriteHeader(http.StatusOK)
}

// admit queues the writes of each event the window has not seen.
func (s *Server) admit(writes []identity.Write) {
	now := time.Now()
	for start := 0; start < len(writes); {
		end := start + 1 // one event's writes share its audit ID
		for end < len(writes) && writes[end].ID == writes[start].ID {
			end++
		}
		for _, wr := range s.window.Admit(writes[start:end], now) {
			s.queue.put(wr)
		}
		start = end
	}
}

// authenticated reports whether r bears a certificate the client CA
// verified, or the token.
func (s *Server) authenticated(r *http.Request) bool { return s.auth.Authenticated(r) }

// maxHeaderBytes bounds a request's headers.
const maxHeaderBytes = 64 << 10

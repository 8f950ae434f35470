package admission

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/kubediff/kubediff/pkg/identity"
	"github.com/kubediff/kubediff/pkg/identity/callerauth"
)

// Options says where the observer listens and with which certificate.
type Options struct {
	// Address is host:port; port 0 picks one.
	Address string
	// CertFile and KeyFile are the serving certificate (PEM) the
	// registration's caBundle trusts. They are read again when they
	// change on disk (a renewed Secret), without a restart.
	CertFile, KeyFile string
	// ClientCAFile and TokenFile say how the API server proves it is the
	// caller: a client certificate the CA signed (the API server's
	// admission config gives it one), or the token, as a bearer token or
	// as the last segment of the registration's path (Path/TOKEN). At
	// least one is required: a review is a claim of who wrote, and
	// anyone who reaches the port could post one.
	ClientCAFile, TokenFile string
}

// Serve listens on opts.Address over TLS and notes every write the API
// server's reviews describe into notes, until stop is called. It returns
// the address it listens on. A certificate that cannot be read or a port
// that cannot be opened is an error naming the key that set it.
func Serve(opts Options, notes identity.Noter, log *slog.Logger) (addr string, stop func(), err error) {
	cert, err := loadCertificate(opts.CertFile, opts.KeyFile, log)
	if err != nil {
		return "", nil, err
	}
	tlsConfig := &tls.Config{GetCertificate: cert.get, MinVersion: tls.VersionTLS12}
	auth, err := authOf(opts, tlsConfig)
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", opts.Address)
	if err != nil {
		return "", nil, fmt.Errorf("admissionObserver.address (--admission-observer-address) %s: %w", opts.Address, err)
	}
	mux := http.NewServeMux()
	h := NewHandler(notes, auth, log)
	mux.Handle(Path, h)
	mux.Handle(Path+"/", h)
	srv := &http.Server{
		Handler:   mux,
		TLSConfig: tlsConfig,
		// The API server waits at most the registration's timeout (1 s)
		// for an answer; these only bound what a stray client may hold.
		ReadHeaderTimeout: 10 * time.Second,
		// The API server sends a few short headers; a stranger's 1 MB of
		// them (Go's default) is refused before it is held.
		MaxHeaderBytes: maxHeaderBytes,
		ReadTimeout:    30 * time.Second,
		WriteTimeout:   30 * time.Second,
		IdleTimeout:    2 * time.Minute,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelDebug), // port scanners' handshakes are no news
	}
	go func() {
		if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("admission observer stopped", "err", err)
		}
	}()
	log.Info("admission observer: serving the validating webhook", "address", ln.Addr().String(), "path", Path)
	return ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// authOf loads how callers are authenticated; one way is required.
func authOf(opts Options, c *tls.Config) (*callerauth.Checker, error) {
	auth, err := callerauth.Load(callerauth.Files{
		ClientCAFile: opts.ClientCAFile, ClientCAFileKey: "admissionObserver.clientCAFile (--admission-observer-client-ca-file)",
		TokenFile: opts.TokenFile, TokenFileKey: "admissionObserver.tokenFile (--admission-observer-token-file)",
	}, c)
	if err == nil && !auth.Configured() {
		err = errors.New(NeedsAuthentication)
	}
	return auth, err
}

// NeedsAuthentication is the error of an observer configured with no way
// to tell the API server from anyone else.
const NeedsAuthentication = "admissionObserver.address (--admission-observer-address) needs admissionObserver.clientCAFile or admissionObserver.tokenFile (--admission-observer-client-ca-file, --admission-observer-token-file): a review names who wrote, and without proof that the API server sent it anyone who reaches the port could name anyone (docs/identity.md#who-may-post-a-review)"

// certificate is the serving key pair, read again when either file's
// modification time changes (checked at most every reloadCheck).
type certificate struct {
	certFile, keyFile string
	log               *slog.Logger
	every             time.Duration // reloadCheck; tests shorten it

	mu             sync.Mutex
	current        *tls.Certificate
	certMod        time.Time
	keyMod         time.Time
	checked        time.Time
	reloadFailures bool // logged once until a reload works
}

// reloadCheck is how often a handshake may look at the files: the API
// server keeps its connections, so handshakes are rare anyway.
const reloadCheck = 10 * time.Second

func loadCertificate(certFile, keyFile string, log *slog.Logger) (*certificate, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("admissionObserver.certFile and admissionObserver.keyFile (--admission-observer-cert-file, --admission-observer-key-file): both are required, the API server calls webhooks over TLS only")
	}
	c := &certificate{certFile: certFile, keyFile: keyFile, log: log, every: reloadCheck}
	if err := c.load(); err != nil {
		return nil, err
	}
	return c, nil
}

// load reads the key pair and the files' modification times.
func (c *certificate) load() error {
	certInfo, err := os.Stat(c.certFile)
	if err != nil {
		return fmt.Errorf("admissionObserver.certFile (--admission-observer-cert-file): %w", err)
	}
	keyInfo, err := os.Stat(c.keyFile)
	if err != nil {
		return fmt.Errorf("admissionObserver.keyFile (--admission-observer-key-file): %w", err)
	}
	pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("admissionObserver.certFile and keyFile (%s, %s): %w", c.certFile, c.keyFile, err)
	}
	c.current, c.certMod, c.keyMod = &pair, certInfo.ModTime(), keyInfo.ModTime()
	return nil
}

// get serves the current key pair, reloading it first if the files
// changed; a pair that no longer loads keeps the last good one.
func (c *certificate) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.checked) < c.every {
		return c.current, nil
	}
	c.checked = time.Now()
	certInfo, err1 := os.Stat(c.certFile)
	keyInfo, err2 := os.Stat(c.keyFile)
	if err1 == nil && err2 == nil && certInfo.ModTime().Equal(c.certMod) && keyInfo.ModTime().Equal(c.keyMod) {
		return c.current, nil
	}
	switch err := c.load(); { // a failed load keeps c.current
	case err != nil && !c.reloadFailures:
		c.reloadFailures = true
		c.log.Warn("admission observer: the changed serving certificate cannot be read; serving the previous one", "err", err)
	case err == nil:
		c.reloadFailures = false
		c.log.Info("admission observer: serving the renewed certificate", "certFile", c.certFile)
	}
	return c.current, nil
}

// maxHeaderBytes bounds a request's headers.
const maxHeaderBytes = 64 << 10

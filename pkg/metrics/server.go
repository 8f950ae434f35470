package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Timeouts of the HTTP server: no endpoint streams, so each request is
// bounded from its first byte to its answer's last (the history's longest,
// a page of records whose access needs a few hundred reviews, or a
// two-moment diff, within a minute), and a keep-alive connection idle
// for idleTimeout is closed: connections left open by callers never pile
// up. Variables, for tests.
var (
	readTimeout  = 30 * time.Second
	writeTimeout = 2 * time.Minute
	idleTimeout  = 60 * time.Second
)

// Serve listens on addr and serves /healthz (the process is alive),
// /readyz (ready returns why not: caches syncing, the API server not
// answering; a follower is ready too) and /metrics until stop is called.
// It returns once listening, with the address it listens on (useful with
// port 0).
func Serve(addr string, m *Metrics, ready func() error, routes func(*http.ServeMux), log *slog.Logger) (string, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("http-address %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := ready(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("/metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry}))
	if routes != nil {
		routes(mux)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: readTimeout,
		WriteTimeout: writeTimeout, IdleTimeout: idleTimeout}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server stopped", "err", err)
		}
	}()
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}
	log.Info("serving health and metrics", "address", ln.Addr().String())
	return ln.Addr().String(), stop, nil
}

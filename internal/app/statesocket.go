package app

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/history/historyapi"
	"github.com/kubediff/kubediff/pkg/state"
)

// serveStateSocket answers history queries on the state dir's unix socket
// (state.SocketPath) while kubediff runs with the dir, so that `history`,
// `get`, `diff`, `mcp` and `ui` given the dir read it through this
// kubediff instead of finding the file locked. The socket is the file's
// equal: only its owner may open it (0600, in the dir), and it answers
// what reading the file would, without access reviews.
func serveStateSocket(st *state.Store, cfg config.Config, log *slog.Logger) (stop func()) {
	if st == nil {
		return func() {}
	}
	path := state.SocketPath(cfg.State.Dir)
	_ = os.Remove(path) // a killed kubediff's: this one holds the dir's lock
	ln, err := state.ListenSocket(cfg.State.Dir)
	if err == nil {
		err = os.Chmod(path, 0o600)
	}
	if err != nil {
		log.Warn("cannot serve the history on the state dir's socket: readers of the dir must ask with --server while kubediff runs", "path", path, "err", err)
		if ln != nil {
			_ = ln.Close()
			_ = os.Remove(path) // the listener leaves its file (state.ListenSocket)
		}
		return func() {}
	}
	mux := http.NewServeMux()
	api := historyapi.NewHandler(st.History(), nil)
	if rules, err := DiffRules(cfg); err == nil { // validated with the config
		api.SetRules(rules)
	}
	api.Register(mux)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Warn("the state dir's socket stopped answering", "path", path, "err", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
		_ = os.Remove(path)
	}
}

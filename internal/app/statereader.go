package app

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/diff"
	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/history/blame"
	"github.com/kubediff/kubediff/pkg/history/historyapi"
	"github.com/kubediff/kubediff/pkg/history/restore"
	"github.com/kubediff/kubediff/pkg/state"
)

// StateDir reads the history in a state dir without ever locking a
// kubediff out of it: each query asks the kubediff running with the dir
// through its socket (serveStateSocket) or, with none running, opens the
// file read-only for that query alone, so that a page left open does not
// keep a watcher from starting. Rules are the diff rules the history was
// kept under (historyapi.Local).
type StateDir struct {
	Dir   string
	Rules *diff.Differ
}

// OpenStateDir checks that dir holds a kubediff state and reads it.
func OpenStateDir(dir string, rules *diff.Differ) (StateDir, error) {
	return StateDir{Dir: dir, Rules: rules}, state.CheckHistory(dir)
}

// Records implements historyapi.Source.
func (s StateDir) Records(ctx context.Context, q history.Query) (history.Page, error) {
	return read(s, func(src historyapi.Source) (history.Page, error) { return src.Records(ctx, q) })
}

// At implements historyapi.Source.
func (s StateDir) At(ctx context.Context, id change.ObjectID, t time.Time) ([]byte, error) {
	return read(s, func(src historyapi.Source) ([]byte, error) { return src.At(ctx, id, t) })
}

// Resolve implements historyapi.Source.
func (s StateDir) Resolve(ctx context.Context, name string) ([]discovery.Resource, error) {
	return read(s, func(src historyapi.Source) ([]discovery.Resource, error) { return src.Resolve(ctx, name) })
}

// Blame implements historyapi.Source.
func (s StateDir) Blame(ctx context.Context, id change.ObjectID, t time.Time, all bool) (blame.Blame, error) {
	return read(s, func(src historyapi.Source) (blame.Blame, error) { return src.Blame(ctx, id, t, all) })
}

// Restore implements historyapi.Source.
func (s StateDir) Restore(ctx context.Context, id change.ObjectID, t time.Time) (restore.Manifest, error) {
	return read(s, func(src historyapi.Source) (restore.Manifest, error) { return src.Restore(ctx, id, t) })
}

// Handler serves the history API of the state dir (for `kubediff ui`),
// each request answered as StateDir answers a query.
func (s StateDir) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.running() {
			s.socketRemote().Proxy().ServeHTTP(w, r)
			return
		}
		reader, closeDB, err := state.OpenHistory(s.Dir)
		if err != nil {
			historyapi.WriteError(w, http.StatusServiceUnavailable, "Unavailable", err)
			return
		}
		defer func() { _ = closeDB() }()
		mux := http.NewServeMux()
		api := historyapi.NewHandler(reader, nil)
		api.SetRules(s.Rules)
		api.Register(mux)
		mux.ServeHTTP(w, r)
	})
}

// socketRemote asks the kubediff running with the dir.
func (s StateDir) socketRemote() *historyapi.Remote {
	return historyapi.NewSocketRemote(func(ctx context.Context) (net.Conn, error) { return state.DialSocket(ctx, s.Dir) })
}

// running says whether a kubediff answers on the dir's socket.
func (s StateDir) running() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	conn, err := state.DialSocket(ctx, s.Dir)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

// read answers one query through the running kubediff, or from the file
// opened for this query.
func read[T any](s StateDir, query func(historyapi.Source) (T, error)) (T, error) {
	if s.running() {
		return query(s.socketRemote())
	}
	reader, closeDB, err := state.OpenHistory(s.Dir)
	if errors.Is(err, state.ErrInUse) && s.running() { // it started meanwhile
		return query(s.socketRemote())
	}
	if err != nil {
		var zero T
		return zero, err
	}
	defer func() { _ = closeDB() }()
	return query(historyapi.Local{Reader: reader, Rules: s.Rules})
}

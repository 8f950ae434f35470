package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/history/pgstore"
	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/state"
)

// connectWait bounds the first attempt to reach the history store at
// start: a database that is down does not hold the watch up (records
// wait in the state dir), but one set up by a newer kubediff is refused
// before anything runs.
const connectWait = 10 * time.Second

// OpenHistoryStore opens history.store with its password (history.
// storePasswordFile, else libpq's environment).
func OpenHistoryStore(ctx context.Context, cfg config.Config) (*pgstore.Store, error) {
	opts := pgstore.Options{}
	if file := cfg.History.StorePasswordFile; file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("history.storePasswordFile: %w", err)
		}
		opts.Password = strings.TrimRight(string(b), "\r\n")
	}
	return pgstore.Open(ctx, cfg.History.Store, opts)
}

// newShipper makes the shipper of the state dir's history to history.
// store, or nil without one. A schema from a newer kubediff is refused
// here; a database that cannot be reached yet is tried again by the
// shipper.
func newShipper(ctx context.Context, cfg config.Config, st *state.Store, cluster *record.Cluster, identity string, log *slog.Logger) (*pgstore.Shipper, error) {
	if cfg.History.Store == "" {
		return nil, nil
	}
	if st == nil {
		return nil, ConfigError{errors.New("history.store (--history-store) needs a state dir (--state-dir): records wait there while the database is down")}
	}
	_, instance, err := st.Identity()
	if err != nil {
		return nil, err
	}
	w := pgstore.Writer{Cluster: StoreClusterID(identity), Instance: instance}
	if cluster != nil {
		w.Name = cluster.Name
	}
	connect := func(ctx context.Context) (*pgstore.Store, error) { return OpenHistoryStore(ctx, cfg) }
	first, cancel := context.WithTimeout(ctx, connectWait)
	defer cancel()
	store, err := connect(first)
	if errors.Is(err, pgstore.ErrNewerSchema) {
		return nil, ConfigError{err}
	}
	log.Info("history store", "database", pgstore.Where(cfg.History.Store), "cluster", w.Cluster)
	retention, _, _ := cfg.History.Bounds()           // validated
	eventRetention, _ := cfg.History.EventRetention() // validated
	return &pgstore.Shipper{Store: store, Connect: connect, Spool: st, Writer: w, Log: log, Retention: retention, EventRetention: eventRetention}, nil
}

// shipLast writes what waits for the history store once the watches have
// stopped and the state dir wrote their last records, within the drain
// timeout: a Pod deleted with its emptyDir loses nothing that could be
// written.
func shipLast(s *pgstore.Shipper, st *state.Store, drain time.Duration, log *slog.Logger) {
	if s == nil || s.Store == nil {
		return
	}
	if err := st.Flush(); err != nil {
		return // closeState says so
	}
	ctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if _, err := s.ShipAll(ctx); err != nil {
		log.Warn("history store: records left in the state dir at shutdown are written at the next start", "err", err)
	}
}

// StoreClusterID is the id a cluster's history has in the history store:
// the kube-system namespace's UID, as records name it, or the state
// dir's identity of the cluster when it could not be read.
func StoreClusterID(identity string) string {
	if id, ok := strings.CutPrefix(identity, "kube-system/"); ok {
		return id
	}
	return identity
}

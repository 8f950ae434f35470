// Package pgstore keeps kubediff's history in PostgreSQL, so that it
// outlives a Pod and one database holds a fleet's: every cluster's
// kubediff writes its rows (history.Row, shipped from its state dir's
// outbox by Ship) under its cluster's id, and every history question is
// answered from them by a Reader of one cluster, with the same answers a
// state dir gives (the conformance suite in this package runs both).
//
// The schema is versioned and applied at Open under an advisory lock;
// entries are partitioned by day so that retention drops whole
// partitions; every write is idempotent on the cluster and the entry's
// id, so that a retry, a restart or a second writer never keeps an entry
// twice.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// queryTimeout bounds one read: the read interface is shared with the
// state dir's, which has no context, so each read brings its own bound.
const queryTimeout = 30 * time.Second

// Store is a PostgreSQL database holding kubediff histories.
type Store struct {
	pool *pgxpool.Pool
	// days have a partition already (partition.go).
	days sync.Map
}

// Options connect to the database beyond the DSN.
type Options struct {
	// Password, when set, is the password (read from a file or a
	// Secret): the DSN itself never carries one.
	Password string
}

// Open connects to the database the DSN names (a URL or libpq's
// key=value form; libpq's environment, PGPASSWORD, PGSSLMODE and
// PGSSLROOTCERT among it, fills in what it leaves out) and brings its
// schema to SchemaVersion.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// The driver's message quotes the DSN, which may hold a password.
		return nil, errors.New("history store: not a PostgreSQL DSN the driver reads")
	}
	if opts.Password != "" {
		cfg.ConnConfig.Password = opts.Password
	}
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("history store %s: %w", Where(dsn), err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		// The driver's errors name the host, user and database, never
		// the password (a test holds it to that).
		return nil, fmt.Errorf("history store %s: %w", Where(dsn), err)
	}
	return &Store{pool: pool}, nil
}

// Close closes the store's connections.
func (s *Store) Close() { s.pool.Close() }

// Where names the database a DSN points at, for messages: host, port and
// database, never a user's password.
func Where(dsn string) string {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return "(unparsable DSN)"
	}
	c := cfg.ConnConfig
	return fmt.Sprintf("%s:%d/%s", c.Host, c.Port, c.Database)
}

// ClusterInfo is a cluster whose history the database holds.
type ClusterInfo struct {
	ID, Name string
	Begin    time.Time
}

// Clusters lists the clusters whose history the database holds.
func (s *Store) Clusters(ctx context.Context) ([]ClusterInfo, error) {
	rows, err := s.pool.Query(ctx, `SELECT cluster, name, begin_at FROM kubediff_clusters ORDER BY name, cluster`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ClusterInfo
	for rows.Next() {
		var c ClusterInfo
		var begin *time.Time
		if err := rows.Scan(&c.ID, &c.Name, &begin); err != nil {
			return nil, err
		}
		if begin != nil {
			c.Begin = begin.UTC()
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// Cluster reads the history of the cluster whose id (or name) is given.
func (s *Store) Cluster(id string) *Reader { return &Reader{s: s, clusters: []string{id}} }

// Fleet reads the records of every cluster the database holds, together
// in time order (each names its cluster); a question about one object
// needs Cluster.
func (s *Store) Fleet(ctx context.Context) (*Reader, error) {
	clusters, err := s.Clusters(ctx)
	r := &Reader{s: s}
	for _, c := range clusters {
		r.clusters = append(r.clusters, c.ID)
	}
	return r, err
}

// Unreachable says whether err is the database not answering (down,
// restarting, unreachable, out of connections, timed out) rather than
// an answer: a reader may then ask another copy of the history.
func Unreachable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		class := pe.Code[:2]
		return class == "08" || class == "53" || class == "57" // connection, resources, operator intervention
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || pgconn.Timeout(err) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

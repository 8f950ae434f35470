package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SchemaVersion is the version of the schema this kubediff writes and
// reads. A database at a newer one was set up by a newer kubediff, whose
// rows this one might misread: it is refused (ErrNewerSchema).
const SchemaVersion = 3

// ErrNewerSchema says the database was set up by a newer kubediff.
var ErrNewerSchema = errors.New("the history's schema is newer than this kubediff knows: upgrade kubediff")

// schemaLock is the advisory lock held while the schema is checked and
// applied, so that two replicas starting at once apply it once.
const schemaLock = 0x6b75626564696666 // "kubediff"

// migrations[i] brings the schema from version i to i+1.
var migrations = []string{
	// 1: the entries of every cluster, partitioned by day (partition.go),
	// so that retention drops whole partitions.
	`CREATE TABLE kubediff_clusters (
		cluster  text PRIMARY KEY,
		name     text NOT NULL DEFAULT '',
		begin_at timestamptz
	);
	CREATE TABLE kubediff_types (
		cluster text NOT NULL,
		type    text NOT NULL,
		names   jsonb NOT NULL,
		PRIMARY KEY (cluster, type)
	);
	CREATE TABLE kubediff_scopes (
		cluster   text NOT NULL,
		kind      text NOT NULL,
		grp       text NOT NULL,
		resource  text NOT NULL,
		namespace text NOT NULL,
		PRIMARY KEY (cluster, kind, grp, resource, namespace)
	);
	CREATE SEQUENCE kubediff_pos;
	CREATE TABLE kubediff_entries (
		cluster   text NOT NULL,
		at        timestamptz NOT NULL,
		pos       bigint NOT NULL DEFAULT nextval('kubediff_pos'),
		id        text NOT NULL,
		kind      text NOT NULL,
		object    text NOT NULL,
		namespace text NOT NULL,
		line      bytea,
		before    bytea,
		after     bytea,
		event_ids text[]
	) PARTITION BY RANGE (at);
	CREATE UNIQUE INDEX kubediff_entries_id ON kubediff_entries (cluster, id, at);
	CREATE INDEX kubediff_entries_time ON kubediff_entries (cluster, at, pos);
	CREATE INDEX kubediff_entries_object ON kubediff_entries (cluster, object, at, pos);
	CREATE INDEX kubediff_entries_events ON kubediff_entries USING gin (event_ids) WHERE kind = 'e';
	CREATE TABLE kubediff_baseline (
		cluster text NOT NULL,
		object  text NOT NULL,
		state   bytea NOT NULL,
		PRIMARY KEY (cluster, object)
	);`,
	// 2: the changes as rows, one column per question (docs/fleet.md),
	// for Grafana's PostgreSQL data source and for people with psql.
	`CREATE VIEW kubediff_changes AS
	SELECT e.at AS time, coalesce(nullif(c.name, ''), e.cluster) AS cluster, e.cluster AS cluster_id,
		e.namespace, r->>'kind' AS kind, r->>'name' AS name, r->>'type' AS type,
		r->'user'->>'name' AS "user", r->'manager'->>'name' AS manager,
		nullif(concat_ws('/', r->'release'->>'namespace', r->'release'->>'name'), '') AS release,
		r->'release'->>'tool' AS release_tool,
		ARRAY(SELECT jsonb_array_elements_text(coalesce(r->'rules', '[]'::jsonb))) AS rules,
		r->>'severity' AS severity, r->'gitops'->>'via' AS gitops,
		r->'event'->>'reason' AS reason, r->>'id' AS record_id, r AS record
	FROM kubediff_entries e JOIN kubediff_clusters c USING (cluster)
	CROSS JOIN LATERAL (SELECT convert_from(e.line, 'UTF8')::jsonb AS r) AS j
	WHERE e.kind IN ('r', 'e');`,
	// 3: a fleet's records in time order, every cluster's together.
	`CREATE INDEX kubediff_entries_fleet ON kubediff_entries (at, pos);`,
}

// migrate applies the migrations the database lacks, under the schema
// lock, in one transaction: a failure leaves the schema as it was.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(schemaLock)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS kubediff_schema (version integer NOT NULL)`); err != nil {
			return err
		}
		var version int
		err := tx.QueryRow(ctx, `SELECT version FROM kubediff_schema`).Scan(&version)
		if errors.Is(err, pgx.ErrNoRows) {
			_, err = tx.Exec(ctx, `INSERT INTO kubediff_schema VALUES (0)`)
		}
		if err != nil {
			return err
		}
		if version > SchemaVersion {
			return fmt.Errorf("%w (the database is at version %d, this kubediff at %d)", ErrNewerSchema, version, SchemaVersion)
		}
		for v := version; v < SchemaVersion; v++ {
			if _, err := tx.Exec(ctx, migrations[v]); err != nil {
				return fmt.Errorf("schema version %d: %w", v+1, err)
			}
		}
		_, err = tx.Exec(ctx, `UPDATE kubediff_schema SET version = $1`, SchemaVersion)
		return err
	})
}

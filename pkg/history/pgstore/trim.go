package pgstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Trim drops what retention no longer keeps: every day's partition whose
// entries are all older than retention (so the database keeps up to a
// day more than the state dir), and events older than eventRetention.
// Before a day goes, the state after each object's last entry of it is
// carried to the object's next entry (its state before), or kept as the
// object's baseline when no entry follows: an object's state stays known
// at every moment the history still covers. Retention is the database's,
// shared by its clusters: the writer with the shortest drops first.
func (s *Store) Trim(ctx context.Context, cluster string, retention, eventRetention time.Duration, now time.Time) error {
	days, err := s.partitions(ctx)
	if err != nil {
		return err
	}
	cutoff := now.Add(-retention)
	for _, d := range days {
		if end := d.AddDate(0, 0, 1); !end.After(cutoff) {
			if err := s.dropDay(ctx, d); err != nil {
				return fmt.Errorf("drop %s: %w", partitionName(d), err)
			}
		}
	}
	if eventRetention > 0 && eventRetention < retention {
		_, err = s.pool.Exec(ctx, `DELETE FROM kubediff_entries WHERE cluster = $1 AND kind = 'e' AND at < $2`, cluster, now.Add(-eventRetention))
	}
	return err
}

// partitions are the days that have a partition, oldest first.
func (s *Store) partitions(ctx context.Context) ([]time.Time, error) {
	rows, err := s.pool.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'kubediff_entries'::regclass ORDER BY c.relname`)
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	var days []time.Time
	for _, name := range names {
		if d, err := time.Parse("20060102", strings.TrimPrefix(name, "kubediff_entries_")); err == nil {
			days = append(days, d)
		}
	}
	return days, err
}

// carry keeps, of each object with entries in the day's partition %s,
// the state after its last one: as the state before its next entry when
// that entry lacks one, else as its baseline (none: deleted).
const carry = `
CREATE TEMP TABLE kubediff_last ON COMMIT DROP AS
	SELECT DISTINCT ON (cluster, object) cluster, object, after FROM %s
	WHERE kind IN ('r', 's') ORDER BY cluster, object, at DESC, pos DESC;
CREATE TEMP TABLE kubediff_next ON COMMIT DROP AS
	SELECT DISTINCT ON (e.cluster, e.object) e.cluster, e.object, e.at, e.pos, e.before FROM kubediff_entries e
	JOIN kubediff_last l ON l.cluster = e.cluster AND l.object = e.object
	WHERE e.at >= '%s' AND e.kind IN ('r', 's') ORDER BY e.cluster, e.object, e.at, e.pos;
UPDATE kubediff_entries e SET before = l.after FROM kubediff_next n, kubediff_last l
	WHERE n.before IS NULL AND l.cluster = n.cluster AND l.object = n.object
	AND e.cluster = n.cluster AND e.object = n.object AND e.at = n.at AND e.pos = n.pos;
INSERT INTO kubediff_baseline (cluster, object, state)
	SELECT l.cluster, l.object, l.after FROM kubediff_last l
	WHERE l.after IS NOT NULL AND NOT EXISTS (SELECT 1 FROM kubediff_next n WHERE n.cluster = l.cluster AND n.object = l.object)
	ON CONFLICT (cluster, object) DO UPDATE SET state = EXCLUDED.state;
DELETE FROM kubediff_baseline b USING kubediff_last l
	WHERE b.cluster = l.cluster AND b.object = l.object AND l.after IS NULL
	AND NOT EXISTS (SELECT 1 FROM kubediff_next n WHERE n.cluster = l.cluster AND n.object = l.object);
UPDATE kubediff_clusters SET begin_at = '%s' WHERE begin_at < '%s';
DROP TABLE %s;`

// dropDay carries what the day's partition knows and drops it, in one
// transaction under the partition lock.
func (s *Store) dropDay(ctx context.Context, d time.Time) error {
	end := d.AddDate(0, 0, 1).Format(time.RFC3339)
	name := partitionName(d)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(partitionLock)); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, name).Scan(&exists); err != nil || !exists {
			return err // another writer dropped it
		}
		_, err := tx.Exec(ctx, fmt.Sprintf(carry, name, end, end, end, name))
		return err
	})
	if err == nil {
		s.days.Delete(d)
	}
	return err
}

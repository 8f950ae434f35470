package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// partitionLock is held while partitions are made, so that two writers
// making the same day's never collide.
const partitionLock = schemaLock + 1

// day is the partition a moment falls in: its UTC day.
func day(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// partitionName is a day's partition.
func partitionName(d time.Time) string { return "kubediff_entries_" + d.Format("20060102") }

// ensurePartitions makes the partitions of the given days that do not
// exist yet, in tx.
func (s *Store) ensurePartitions(ctx context.Context, tx pgx.Tx, days map[time.Time]bool) error {
	locked := false
	for d := range days {
		if _, ok := s.days.Load(d); ok {
			continue
		}
		if !locked {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(partitionLock)); err != nil {
				return err
			}
			locked = true
		}
		stmt := fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s PARTITION OF kubediff_entries FOR VALUES FROM ('%s') TO ('%s')`,
			partitionName(d), d.Format(time.RFC3339), d.AddDate(0, 0, 1).Format(time.RFC3339))
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("partition %s: %w", partitionName(d), err)
		}
	}
	return nil
}

// madePartitions remembers days whose partitions a committed transaction
// made.
func (s *Store) madePartitions(days map[time.Time]bool) {
	for d := range days {
		s.days.Store(d, true)
	}
}

package pgstore

import (
	"context"
	"encoding/hex"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/history"
)

// Writer names who writes: the cluster (its id, and the name people call
// it) and the state dir shipping its rows (Instance: events fold per
// state dir, so their entries are named by it).
type Writer struct {
	Cluster, Name, Instance string
}

// Write keeps rows, in one transaction: all or none. A row kept already
// (the same cluster and id) is passed over, so that rows shipped again
// after a crash or by a second writer are kept once.
func (s *Store) Write(ctx context.Context, w Writer, rows []history.Row) error {
	days := map[time.Time]bool{}
	for _, r := range rows {
		if r.Kind == history.RowRecord || r.Kind == history.RowState || r.Kind == history.RowEvent {
			days[day(r.Time())] = true
		}
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := s.ensurePartitions(ctx, tx, days); err != nil {
			return err
		}
		// One writer of a cluster at a time: a record two replicas both
		// saw is then found kept by the second (queueEntry).
		b := &pgx.Batch{}
		b.Queue(`SELECT pg_advisory_xact_lock(hashtext($1))`, w.Cluster)
		b.Queue(`INSERT INTO kubediff_clusters (cluster, name) VALUES ($1, $2)
			ON CONFLICT (cluster) DO UPDATE SET name = EXCLUDED.name WHERE EXCLUDED.name <> ''`, w.Cluster, w.Name)
		scopes := map[scopeRow]bool{}
		for _, r := range rows {
			queueRow(b, w, r, scopes)
		}
		for sc := range scopes {
			b.Queue(`INSERT INTO kubediff_scopes VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
				w.Cluster, sc.kind, sc.group, sc.resource, sc.namespace)
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err == nil {
		s.madePartitions(days)
	} else {
		// Another writer's retention may have dropped a day this one
		// thought made: the retry makes it again.
		s.days.Clear()
	}
	return err
}

// scopeRow is a type in a namespace the cluster's history holds entries
// of ("r": records and states) or events about ("e"), for Scopes.
type scopeRow struct{ kind, group, resource, namespace string }

// queueRow queues what keeps one row.
func queueRow(b *pgx.Batch, w Writer, r history.Row, scopes map[scopeRow]bool) {
	switch r.Kind {
	case history.RowRecord, history.RowState:
		group, resource, namespace, _ := r.Object.Parts()
		scopes[scopeRow{"r", group, resource, namespace}] = true
		queueEntry(b, w.Cluster, r, r.ID, nil)
	case history.RowEvent:
		if r.Drops != nil {
			// The entry this event folded is replaced by this one.
			b.Queue(`DELETE FROM kubediff_entries WHERE cluster = $1 AND id = $2 AND at = $3`,
				w.Cluster, eventID(w.Instance, r.Drops), history.Row{Key: r.Drops}.Time())
		}
		ids := make([]string, len(r.EventIDs))
		for i, id := range r.EventIDs {
			ids[i] = string(id)
			group, resource, namespace, _ := id.Parts()
			scopes[scopeRow{"e", group, resource, namespace}] = true
		}
		queueEntry(b, w.Cluster, r, eventID(w.Instance, r.Key), ids)
	case history.RowType:
		b.Queue(`INSERT INTO kubediff_types VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, w.Cluster, string(r.Object), r.Line)
	case history.RowBegin:
		b.Queue(`UPDATE kubediff_clusters SET begin_at = LEAST(COALESCE(begin_at, $2), $2) WHERE cluster = $1`, w.Cluster, r.Time())
	}
}

// sameRecordWithin is how far apart two writers' times of one record may
// be for the second to be known as the same (a record's time is when its
// kubediff saw the change): the search for it stays in a few partitions.
const sameRecordWithin = "1 hour"

// queueEntry queues the insert of an entry, unless the cluster keeps one
// of the same id already.
func queueEntry(b *pgx.Batch, cluster string, r history.Row, id string, eventIDs []string) {
	_, _, namespace, _ := r.Object.Parts()
	b.Queue(`INSERT INTO kubediff_entries (cluster, at, id, kind, object, namespace, line, before, after, event_ids)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10
		WHERE NOT EXISTS (SELECT 1 FROM kubediff_entries WHERE cluster = $1 AND id = $3
			AND at BETWEEN $2::timestamptz - interval '`+sameRecordWithin+`' AND $2::timestamptz + interval '`+sameRecordWithin+`')`,
		cluster, r.Time(), id, string(r.Kind), string(r.Object), namespace, r.Line, r.Before, r.After, eventIDs)
}

// eventID names an event entry: the state dir that folded it and its key
// there.
func eventID(instance string, key []byte) string {
	return "event/" + instance + "/" + hex.EncodeToString(key)
}

// Baseline keeps the states of objects as they were when the history
// began to know them (a state dir's stored objects), for objects no
// entry tells of: an object that never changed has had that state since.
// A state kept already stays.
func (s *Store) Baseline(ctx context.Context, cluster string, ids []change.ObjectID, packed [][]byte) error {
	b := &pgx.Batch{}
	for i, id := range ids {
		b.Queue(`INSERT INTO kubediff_baseline VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, cluster, history.ObjectKey(id), packed[i])
	}
	return s.pool.SendBatch(ctx, b).Close()
}

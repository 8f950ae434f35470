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
	p := plan(w, rows)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := s.ensurePartitions(ctx, tx, p.days); err != nil {
			return err
		}
		if err := tx.SendBatch(ctx, p.batch(w)).Close(); err != nil {
			return err
		}
		return insertEntries(ctx, tx, w.Cluster, p.entries)
	})
	if err == nil {
		s.madePartitions(p.days)
	} else {
		// Another writer's retention may have dropped a day this one
		// thought made: the retry makes it again.
		s.days.Clear()
	}
	return err
}

// writePlan is what a batch of rows asks of the database.
type writePlan struct {
	days    map[time.Time]bool // the partitions the entries need
	entries [][]any            // kubediff_incoming's rows, in order
	drops   []string           // ids of event entries folded into later ones
	types   []history.Row
	begin   []time.Time
	scopes  map[scopeRow]bool
}

// plan sorts rows into what one transaction writes. An event entry that
// a later row of the batch folds is never inserted: the fold deletes
// earlier ones, and a batch inserts after it deletes.
func plan(w Writer, rows []history.Row) writePlan {
	p := writePlan{days: map[time.Time]bool{}, scopes: map[scopeRow]bool{}}
	dropped := map[string]bool{}
	for _, r := range rows {
		if r.Kind == history.RowEvent && r.Drops != nil {
			id := eventID(w.Instance, r.Drops)
			dropped[id] = true
			p.drops = append(p.drops, id)
		}
	}
	for _, r := range rows {
		switch r.Kind {
		case history.RowRecord, history.RowState:
			group, resource, namespace, _ := r.Object.Parts()
			p.scopes[scopeRow{"r", group, resource, namespace}] = true
			p.add(r, r.ID, nil)
		case history.RowEvent:
			ids := make([]string, len(r.EventIDs))
			for i, id := range r.EventIDs {
				ids[i] = string(id)
				group, resource, namespace, _ := id.Parts()
				p.scopes[scopeRow{"e", group, resource, namespace}] = true
			}
			if id := eventID(w.Instance, r.Key); !dropped[id] {
				p.add(r, id, ids)
			}
		case history.RowType:
			p.types = append(p.types, r)
		case history.RowBegin:
			p.begin = append(p.begin, r.Time())
		}
	}
	return p
}

// add plans the insert of an entry.
func (p *writePlan) add(r history.Row, id string, eventIDs []string) {
	_, _, namespace, _ := r.Object.Parts()
	p.days[day(r.Time())] = true
	p.entries = append(p.entries, []any{r.Time(), id, string(r.Kind), string(r.Object), namespace, r.Line, r.Before, r.After, eventIDs})
}

// batch is every statement of the plan but the entries' insert.
func (p writePlan) batch(w Writer) *pgx.Batch {
	b := &pgx.Batch{}
	// One writer of a cluster at a time: a record two replicas both saw
	// is then found kept by the second (insertEntries).
	b.Queue(`SELECT pg_advisory_xact_lock(hashtext($1))`, w.Cluster)
	b.Queue(`INSERT INTO kubediff_clusters (cluster, name) VALUES ($1, $2)
		ON CONFLICT (cluster) DO UPDATE SET name = EXCLUDED.name WHERE EXCLUDED.name <> ''`, w.Cluster, w.Name)
	if len(p.drops) > 0 {
		b.Queue(`DELETE FROM kubediff_entries WHERE cluster = $1 AND kind = 'e' AND id = ANY($2)`, w.Cluster, p.drops)
	}
	for _, r := range p.types {
		b.Queue(`INSERT INTO kubediff_types VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, w.Cluster, string(r.Object), r.Line)
	}
	for _, t := range p.begin {
		b.Queue(`UPDATE kubediff_clusters SET begin_at = LEAST(COALESCE(begin_at, $2), $2) WHERE cluster = $1`, w.Cluster, t)
	}
	for sc := range p.scopes {
		b.Queue(`INSERT INTO kubediff_scopes VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
			w.Cluster, sc.kind, sc.group, sc.resource, sc.namespace)
	}
	return b
}

// incomingColumns are the columns an entry is copied with; pos comes
// from the sequence as each row is copied, so it follows the rows' order.
var incomingColumns = []string{"at", "id", "kind", "object", "namespace", "line", "before", "after", "event_ids"}

// sameRecordWithin is how far apart two writers' times of one record may
// be for the second to be known as the same (a record's time is when its
// kubediff saw the change): the search for it stays in a few partitions.
const sameRecordWithin = "1 hour"

// insertEntries copies the entries into a temporary table, then inserts
// those the cluster does not keep yet: one COPY and one statement,
// however many rows.
func insertEntries(ctx context.Context, tx pgx.Tx, cluster string, entries [][]any) error {
	if len(entries) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS kubediff_incoming (
		at timestamptz, id text, kind text, object text, namespace text, line bytea, before bytea, after bytea, event_ids text[],
		pos bigint DEFAULT nextval('kubediff_pos')) ON COMMIT DELETE ROWS`); err != nil {
		return err
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"kubediff_incoming"}, incomingColumns, pgx.CopyFromRows(entries)); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO kubediff_entries (cluster, at, pos, id, kind, object, namespace, line, before, after, event_ids)
		SELECT $1, i.at, i.pos, i.id, i.kind, i.object, i.namespace, i.line, i.before, i.after, i.event_ids FROM kubediff_incoming i
		WHERE NOT EXISTS (SELECT 1 FROM kubediff_entries e WHERE e.cluster = $1 AND e.id = i.id
			AND e.at BETWEEN i.at - interval '`+sameRecordWithin+`' AND i.at + interval '`+sameRecordWithin+`')
		ON CONFLICT DO NOTHING`, cluster)
	return err
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

// scopeRow is a type in a namespace the cluster's history holds entries
// of ("r": records and states) or events about ("e"), for Scopes.
type scopeRow struct{ kind, group, resource, namespace string }

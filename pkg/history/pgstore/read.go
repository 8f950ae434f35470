package pgstore

import (
	"context"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/history"
)

// Reader answers history queries about one cluster from the database,
// as history.Reader answers them from a state dir. It is safe for
// concurrent use.
type Reader struct {
	s *Store
	// clusters are the clusters read: one, or a fleet's (Store.Fleet),
	// whose records list together but whose objects are each a cluster's.
	clusters []string
}

// ErrFleet says a question about one object was asked of a fleet.
var ErrFleet = errors.New("an object is one cluster's: name the cluster (--cluster)")

// oneCluster refuses an object's question asked of a fleet.
func (r *Reader) oneCluster() error {
	if len(r.clusters) != 1 {
		return ErrFleet
	}
	return nil
}

// scanChunk is how many entries a page's read takes at a time: entries
// are chosen by the query's rules after they are read (history.Query.
// Lists), so a page may take more than one.
const scanChunk = 1000

// Records returns a page of the records q selects, oldest first.
func (r *Reader) Records(q history.Query) (history.Page, error) {
	var page history.Page
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	after, err := startOf(q)
	if err != nil {
		return page, err
	}
	begin, err := r.begin(ctx)
	if err != nil || begin.IsZero() {
		return page, err
	}
	page.Begin = &begin
	limit := q.Limit
	if limit <= 0 {
		limit = history.DefaultLimit
	}
	var last position
	for {
		rows, err := r.scan(ctx, q, after)
		if err != nil {
			return page, err
		}
		for _, e := range rows {
			if !q.Lists(e.row) {
				continue
			}
			if len(page.Records) == limit {
				page.Next = history.PageToken(last.at, last.pos)
				return page, nil
			}
			page.Records = append(page.Records, e.row.Line)
			last = e.position
		}
		if len(rows) < scanChunk {
			return page, nil
		}
		after = rows[len(rows)-1].position
		after.inclusive = false
	}
}

// position is an entry's place in a cluster's order: its time, then the
// order it was written in.
type position struct {
	at        time.Time
	pos       uint64
	inclusive bool // the scan starts at at, whatever pos
}

// startOf is where a query's scan starts: after its page token's entry,
// or at its From.
func startOf(q history.Query) (position, error) {
	if q.After == "" {
		return position{at: ceilMicro(q.From), inclusive: true}, nil
	}
	at, pos, err := history.ReadPageToken(q.After)
	return position{at: at, pos: pos}, err
}

// entry is a row read back, with its place.
type entry struct {
	row history.Row
	position
}

// scan reads up to scanChunk of the entries (records and events) q may
// list after from, in order.
func (r *Reader) scan(ctx context.Context, q history.Query, from position) ([]entry, error) {
	until := time.Unix(0, math.MaxInt64)
	if !q.Until.IsZero() {
		until = q.Until.Truncate(time.Microsecond)
	}
	kinds := []string{string(history.RowRecord), string(history.RowEvent)}
	if q.Events == history.EventsNone {
		kinds = kinds[:1]
	}
	sql := `SELECT at, pos, kind, object, line, event_ids FROM kubediff_entries
		WHERE cluster = ANY($1) AND kind = ANY($2) AND at <= $3 AND (at, pos) > ($4, $5)`
	args := []any{r.clusters, kinds, until, from.at, int64(from.pos)}
	if from.inclusive {
		sql = `SELECT at, pos, kind, object, line, event_ids FROM kubediff_entries
			WHERE cluster = ANY($1) AND kind = ANY($2) AND at <= $3 AND at >= $4 AND $5::bigint >= 0`
	}
	if ids := q.Objects(); ids != nil {
		// Named objects: their own entries, and events about what they own.
		sql += ` AND (object = ANY($6) OR kind = 'e' AND event_ids && $6)`
		args = append(args, objectKeys(ids))
	}
	rows, err := r.s.pool.Query(ctx, sql+` ORDER BY at, pos LIMIT `+strconv.Itoa(scanChunk), args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (entry, error) {
		var e entry
		var kind, object string
		var pos int64
		var ids []string
		err := row.Scan(&e.at, &pos, &kind, &object, &e.row.Line, &ids)
		e.at, e.pos = e.at.UTC(), uint64(pos)
		e.row.Kind, e.row.Object = history.RowKind(kind), change.ObjectID(object)
		for _, id := range ids {
			e.row.EventIDs = append(e.row.EventIDs, change.ObjectID(id))
		}
		return e, err
	})
}

// At returns the object's state at t as kubediff had it, as history.
// Reader.At does: the state after its last entry at or before t, else
// (t within the history) the state before its next entry, else the state
// it had when the history began to know it.
func (r *Reader) At(id change.ObjectID, t time.Time) ([]byte, error) {
	if err := r.oneCluster(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	begin, err := r.begin(ctx)
	if err != nil {
		return nil, err
	}
	if begin.IsZero() {
		return nil, history.ErrBeforeHistory
	}
	key, t := history.ObjectKey(id), t.Truncate(time.Microsecond)
	var after []byte
	err = r.s.pool.QueryRow(ctx, `SELECT after FROM kubediff_entries WHERE cluster = ANY($1) AND object = $2 AND kind IN ('r', 's') AND at <= $3
		ORDER BY at DESC, pos DESC LIMIT 1`, r.clusters, key, t).Scan(&after)
	if err == nil {
		return unpacked(after)
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, err
	}
	if t.Before(begin) {
		return nil, history.ErrBeforeHistory
	}
	var before []byte
	err = r.s.pool.QueryRow(ctx, `SELECT before FROM kubediff_entries WHERE cluster = ANY($1) AND object = $2 AND kind IN ('r', 's') AND at > $3
		ORDER BY at, pos LIMIT 1`, r.clusters, key, t).Scan(&before)
	if err == nil {
		return unpacked(before)
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, err
	}
	var state []byte
	err = r.s.pool.QueryRow(ctx, `SELECT state FROM kubediff_baseline WHERE cluster = ANY($1) AND object = $2`, r.clusters, key).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, history.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return unpacked(state)
}

// unpacked is a packed state's JSON; none is history.ErrNotFound (the
// object was deleted, or not yet made).
func unpacked(packed []byte) ([]byte, error) {
	if packed == nil {
		return nil, history.ErrNotFound
	}
	return history.UnpackState(packed)
}

// Steps returns at most limit of the object's steps kept at or before
// until, newest first, as history.Reader.Steps does.
func (r *Reader) Steps(id change.ObjectID, until time.Time, limit int) (history.Steps, error) {
	var out history.Steps
	if err := r.oneCluster(); err != nil {
		return out, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	begin, err := r.begin(ctx)
	if err != nil || begin.IsZero() {
		return out, err
	}
	out.Begin = begin
	if until.IsZero() {
		until = time.Unix(0, math.MaxInt64)
	}
	var oldestBefore []byte
	rows, err := r.s.pool.Query(ctx, `SELECT at, line, before, after FROM kubediff_entries
		WHERE cluster = ANY($1) AND object = $2 AND kind IN ('r', 's') AND at <= $3 ORDER BY at DESC, pos DESC LIMIT $4`,
		r.clusters, history.ObjectKey(id), until.Truncate(time.Microsecond), limit+1)
	if err != nil {
		return out, err
	}
	defer rows.Close()
	for rows.Next() {
		var at time.Time
		var line, before, after []byte
		if err := rows.Scan(&at, &line, &before, &after); err != nil {
			return out, err
		}
		if len(out.Steps) == limit {
			return out, rows.Err() // more are kept: not Complete
		}
		out.Steps = append(out.Steps, history.PackedStep(at.UTC(), line, after))
		oldestBefore = before
	}
	out.Complete = true
	out.SetPackedBefore(oldestBefore)
	return out, rows.Err()
}

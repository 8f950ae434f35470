package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/history"
)

// begin is when the cluster's history begins (zero: nothing kept).
func (r *Reader) begin(ctx context.Context) (time.Time, error) {
	var begin *time.Time
	// Of a fleet: the earliest (a window before a later one's lacks only
	// that cluster's).
	err := r.s.pool.QueryRow(ctx, `SELECT min(begin_at) FROM kubediff_clusters WHERE cluster = ANY($1)`, r.clusters).Scan(&begin)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && begin == nil {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	return begin.UTC(), nil
}

// Begin is the moment from which the history knows every watched
// object's state (zero: nothing kept yet).
func (r *Reader) Begin() (time.Time, error) {
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	return r.begin(ctx)
}

// Resolve returns the types kept whose names match name as kubectl
// matches them; every type kept for "".
func (r *Reader) Resolve(name string) ([]change.Resource, error) {
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	rows, err := r.s.pool.Query(ctx, `SELECT DISTINCT ON (type) names FROM kubediff_types WHERE cluster = ANY($1) ORDER BY type`, r.clusters)
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, err
	}
	var out []change.Resource
	for _, v := range names {
		var t history.TypeNames
		if json.Unmarshal(v, &t) == nil && (name == "" || t.Type().Matches(name)) {
			out = append(out, t.Type())
		}
	}
	return out, nil
}

// Scopes returns the types and namespaces, among those the cluster's
// history holds entries of, that q may read, as history.Reader.Scopes
// does.
func (r *Reader) Scopes(q history.Query) ([]history.Scope, error) {
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	var out []history.Scope
	add := func(s history.Scope) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if ids := q.Objects(); ids != nil {
		for _, id := range ids {
			group, resource, namespace, _ := id.Parts()
			add(history.Scope{Group: group, Resource: resource, Namespace: namespace})
		}
		// Events listed under the named objects: their own objects'.
		rows, err := r.s.pool.Query(ctx, `SELECT DISTINCT object FROM kubediff_entries WHERE cluster = ANY($1) AND kind = 'e' AND event_ids && $2`,
			r.clusters, objectKeys(ids))
		if err != nil {
			return nil, err
		}
		objects, err := pgx.CollectRows(rows, pgx.RowTo[string])
		for _, o := range objects {
			group, resource, namespace, _ := change.ObjectID(o).Parts()
			add(history.Scope{Group: group, Resource: resource, Namespace: namespace})
			add(history.EventsScope(namespace))
		}
		return out, err
	}
	kept, err := r.scopesKept(ctx)
	for _, sc := range kept {
		if sc.kind == "r" && chosen(q, sc) {
			add(history.Scope{Group: sc.group, Resource: sc.resource, Namespace: sc.namespace})
		}
	}
	for _, sc := range kept {
		if sc.kind == "e" && (q.Namespace == "" || sc.namespace == q.Namespace) {
			add(history.Scope{Group: sc.group, Resource: sc.resource, Namespace: sc.namespace})
			add(history.EventsScope(sc.namespace))
		}
	}
	return out, err
}

// chosen says whether q's selectors and namespace take in a kept scope.
func chosen(q history.Query, sc scopeRow) bool {
	if q.Namespace != "" && sc.namespace != q.Namespace {
		return false
	}
	if len(q.Select) == 0 {
		return true
	}
	return slices.ContainsFunc(q.Select, func(s history.Selector) bool { return s.Group == sc.group && s.Resource == sc.resource })
}

// scopesKept are the scopes the cluster's history holds.
func (r *Reader) scopesKept(ctx context.Context) ([]scopeRow, error) {
	rows, err := r.s.pool.Query(ctx, `SELECT kind, grp, resource, namespace FROM kubediff_scopes WHERE cluster = ANY($1) ORDER BY kind DESC, grp, resource, namespace`, r.clusters)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (scopeRow, error) {
		var s scopeRow
		err := row.Scan(&s.kind, &s.group, &s.resource, &s.namespace)
		return s, err
	})
}

// Stats counts what the cluster's history holds (Bytes: of the entries'
// JSON and states). For figures and tests.
func (r *Reader) Stats() (history.Stats, error) {
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	var s history.Stats
	err := r.s.pool.QueryRow(ctx, `SELECT
			count(*) FILTER (WHERE kind = 'r'), count(*) FILTER (WHERE kind = 's'), count(*) FILTER (WHERE kind = 'e'),
			coalesce(sum(coalesce(length(line), 0) + coalesce(length(before), 0) + coalesce(length(after), 0)), 0)
		FROM kubediff_entries WHERE cluster = ANY($1)`, r.clusters).Scan(&s.Records, &s.QuietStates, &s.Events, &s.Bytes)
	return s, err
}

// objectKeys are ids as the entries' columns hold them.
func objectKeys(ids []change.ObjectID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(id)
	}
	return out
}

// ceilMicro is t rounded up to the database's precision, a microsecond:
// an entry kept at a moment before t is never listed from t.
func ceilMicro(t time.Time) time.Time {
	if d := t.Truncate(time.Microsecond); d.Before(t) {
		return d.Add(time.Microsecond)
	}
	return t
}

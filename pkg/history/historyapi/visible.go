package historyapi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"
	authnv1 "k8s.io/api/authentication/v1"

	"github.com/kubediff/kubediff/pkg/history"
)

// maxReviews bounds the access reviews one query may ask the API server
// (decisions already cached cost none): a caller who may list a type in
// every namespace costs one per type, one bound to namespaces one per
// type and namespace the history holds.
const maxReviews = 500

// reviewsAtOnce is how many of a query's reviews are asked at a time.
const reviewsAtOnce = 4

// ErrTooBroad says a query would need more access reviews than one query
// may ask: the caller's mistake, to narrow.
var ErrTooBroad = errors.New("too broad")

// Visible decides, before anything is read, which of scopes (a query's,
// history.Reader.Scopes) user may see: first each type over every
// namespace, then, for the types not granted so, each namespace. Reviews
// are asked with ctx, a few at a time. A nil Access grants everything
// (nil Grants).
func (a *Access) Visible(ctx context.Context, user *authnv1.UserInfo, scopes []history.Scope) (*history.Grants, error) {
	if a == nil {
		return nil, nil
	}
	grants := &history.Grants{}
	var types []history.Scope
	for _, s := range scopes {
		if t := (history.Scope{Group: s.Group, Resource: s.Resource}); !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	budget := maxReviews
	everywhere, err := a.decide(ctx, user, types, &budget)
	if err != nil {
		return nil, err
	}
	var perNamespace []history.Scope
	for _, s := range scopes {
		t := history.Scope{Group: s.Group, Resource: s.Resource}
		switch {
		case everywhere[t]:
			grants.Grant(t)
		case s.Namespace != "":
			perNamespace = append(perNamespace, s)
		}
	}
	inNamespace, err := a.decide(ctx, user, perNamespace, &budget)
	if err != nil {
		return nil, err
	}
	for s, ok := range inNamespace {
		if ok {
			grants.Grant(s)
		}
	}
	return grants, nil
}

// decide answers whether user may list each of scopes: from the cache,
// else by a review, spending budget. A query that would overspend it is
// ErrTooBroad before any review is asked.
func (a *Access) decide(ctx context.Context, user *authnv1.UserInfo, scopes []history.Scope, budget *int) (map[history.Scope]bool, error) {
	out := make(map[history.Scope]bool, len(scopes))
	var ask []history.Scope
	for _, s := range scopes {
		if ok, known := a.known(user, s); known {
			out[s] = ok
		} else {
			ask = append(ask, s)
		}
	}
	if len(ask) > *budget {
		return nil, fmt.Errorf("%w: this query would need %d more access reviews of your RBAC than the %d one query may ask (a type and namespace each, where you may not list the type everywhere); name a namespace or types", ErrTooBroad, len(ask)-*budget, maxReviews)
	}
	*budget -= len(ask)
	var mu sync.Mutex
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(reviewsAtOnce)
	for _, s := range ask {
		g.Go(func() error {
			ok, err := a.review(ctx, user, s)
			mu.Lock()
			out[s] = ok
			mu.Unlock()
			return err
		})
	}
	return out, g.Wait()
}

// visibleQuery is q as user may read it: its namespace checked, and the
// types and namespaces user may see decided before the history is read.
func visibleQuery(ctx context.Context, reader Store, access *Access, user *authnv1.UserInfo, q history.Query) (history.Query, error) {
	if err := checkNamespace(q.Namespace); err != nil {
		return q, err
	}
	if access == nil {
		return q, nil
	}
	scopes, err := reader.Scopes(q)
	if err != nil {
		return q, err
	}
	q.Visible, err = access.Visible(ctx, user, scopes)
	return q, err
}

package discovery

import (
	"errors"
	"fmt"
	"slices"
)

// Select keeps the resources named in include (all when include is empty)
// and drops those named in exclude. Names are what kubectl accepts: plural,
// singular, kind or short name, optionally qualified by group
// ("deployments.apps", "deploy.apps") or by version and group
// ("deployments.v1.apps"), case-insensitively. A name that matches no
// resource is an error naming it, because a typo would otherwise silently
// watch nothing (or everything).
func Select(all []Resource, include, exclude []string) ([]Resource, error) {
	var errs []error
	matchAny := func(key string, names []string) func(Resource) bool {
		for _, n := range names {
			if !slices.ContainsFunc(all, func(r Resource) bool { return r.Matches(n) }) {
				errs = append(errs, fmt.Errorf("%s: no resource type named %q on this server", key, n))
			}
		}
		return func(r Resource) bool {
			return slices.ContainsFunc(names, r.Matches)
		}
	}
	included := matchAny("resources", include)
	excluded := matchAny("excludeResources", exclude)
	if err := errors.Join(errs...); err != nil {
		return nil, &SelectionError{err}
	}
	var out []Resource
	for _, r := range all {
		if (len(include) == 0 || included(r)) && !excluded(r) {
			out = append(out, r)
		}
	}
	return out, nil
}

// SelectionError is a user's mistake in choosing what to watch: a name
// that matches no type, a namespace glob that cannot be expanded.
type SelectionError struct{ Err error }

func (e *SelectionError) Error() string { return e.Err.Error() }
func (e *SelectionError) Unwrap() error { return e.Err }

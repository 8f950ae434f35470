package discovery

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// AccessChecker asks the API server whether kubediff may list and watch a
// type in a namespace ("" for cluster-wide), so that a forbidden type is
// skipped with one warning instead of a reflector retrying forever.
type AccessChecker struct {
	client authorizationclient.SelfSubjectAccessReviewInterface
}

// NewAccessChecker returns a checker using SelfSubjectAccessReviews.
func NewAccessChecker(client authorizationclient.SelfSubjectAccessReviewsGetter) *AccessChecker {
	return &AccessChecker{client: client.SelfSubjectAccessReviews()}
}

// everything stands for every group and resource in an access review: a
// rule granting "*" matches it, a rule naming types does not.
var everything = Resource{GVR: schema.GroupVersionResource{Group: "*", Resource: "*"}}

// Allowed reports whether both list and watch are allowed, and if not, why.
func (a *AccessChecker) Allowed(ctx context.Context, r Resource, namespace string) (bool, string, error) {
	for _, verb := range []string{"list", "watch"} {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: namespace, Verb: verb, Group: r.GVR.Group, Version: r.GVR.Version, Resource: r.GVR.Resource,
			},
		}}
		res, err := a.client.Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return false, "", fmt.Errorf("access review for %s: %w", r, err)
		}
		if !res.Status.Allowed {
			where := "cluster-wide"
			if namespace != "" {
				where = "in namespace " + namespace
			}
			return false, fmt.Sprintf("%s forbidden %s", verb, where), nil
		}
	}
	return true, "", nil
}

// allowedAll checks targets concurrently (a few at a time, within the
// client's rate limit) and returns the allowed ones plus a reason for each
// forbidden one.
func (a *AccessChecker) allowedAll(ctx context.Context, targets []Target) ([]Target, map[string]string, error) {
	// Groups granted whole need no review per type: 556 reviews for 278
	// types took 9 s; a few per group take a fraction of that.
	covered, err := a.coveredGroups(ctx, targets)
	if err != nil {
		return nil, nil, err
	}
	allowed := make([]bool, len(targets))
	reasons := make([]string, len(targets))
	errs := make([]error, len(targets))
	a.parallel(len(targets), func(i int) {
		t := targets[i]
		if covered[t.Resource.GVR.Group] {
			allowed[i] = true
			return
		}
		allowed[i], reasons[i], errs[i] = a.Allowed(ctx, t.Resource, t.Namespace)
	})
	var ok []Target
	forbidden := map[string]string{} // by Target.Key
	for i, t := range targets {
		if errs[i] != nil {
			return nil, nil, errs[i]
		}
		if allowed[i] {
			ok = append(ok, t)
		} else {
			forbidden[t.Key()] = reasons[i]
		}
	}
	return ok, forbidden, nil
}

// coveredGroups returns the API groups of targets whose every type may
// be listed and watched cluster-wide (and so in every namespace): all of
// them when the credentials may list and watch everything (a cluster
// admin), else those granted whole (kubediff's ClusterRole grants most
// built-in groups so); the rest are checked type by type.
func (a *AccessChecker) coveredGroups(ctx context.Context, targets []Target) (map[string]bool, error) {
	var groups []string
	for _, t := range targets {
		if !slices.Contains(groups, t.Resource.GVR.Group) {
			groups = append(groups, t.Resource.GVR.Group)
		}
	}
	covered := map[string]bool{}
	all, _, err := a.Allowed(ctx, everything, "")
	if err != nil || all {
		for _, g := range groups {
			covered[g] = all
		}
		return covered, err
	}
	ok, errs := make([]bool, len(groups)), make([]error, len(groups))
	a.parallel(len(groups), func(i int) {
		whole := Resource{GVR: schema.GroupVersionResource{Group: groups[i], Resource: "*"}}
		ok[i], _, errs[i] = a.Allowed(ctx, whole, "")
	})
	for i, g := range groups {
		covered[g] = ok[i]
	}
	return covered, errors.Join(errs...)
}

// parallel runs fn for 0..n-1, a few at a time: within the client's rate
// limit, and kind to the API server.
func (a *AccessChecker) parallel(n int, fn func(i int)) {
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			fn(i)
		})
	}
	wg.Wait()
}

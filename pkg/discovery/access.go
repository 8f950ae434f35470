package discovery

import (
	"context"
	"fmt"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	allowed := make([]bool, len(targets))
	reasons := make([]string, len(targets))
	errs := make([]error, len(targets))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			allowed[i], reasons[i], errs[i] = a.Allowed(ctx, t.Resource, t.Namespace)
		})
	}
	wg.Wait()
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

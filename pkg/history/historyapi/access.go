package historyapi

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubediff/kubediff/pkg/history"
)

// accessTTL is how long an identity or a decision is reused: as
// kube-rbac-proxy and the kubelet cache theirs, briefly, so that a query
// costs a few reviews, not one per record, and a revoked binding takes
// effect within it.
const accessTTL = 30 * time.Second

// reviewTimeout bounds one review: a slow API server makes a query fail,
// not hang.
const reviewTimeout = 5 * time.Second

// Access authenticates each caller with the API server (TokenReview of
// the caller's bearer token) and answers only what the caller may list
// (SubjectAccessReview per type and namespace), as kube-rbac-proxy and
// metrics-server do. Nothing is anonymous.
type Access struct {
	kube kubernetes.Interface
	log  *slog.Logger
	now  func() time.Time

	mu        sync.Mutex
	users     map[[32]byte]cached[*authnv1.UserInfo] // by the token's hash
	decisions map[[32]byte]cached[bool]              // by decisionKey
	failing   bool                                   // the last review failed: logged once per episode
}

type cached[T any] struct {
	value T
	until time.Time
}

// decisionKey names one question asked of the authorizer: may user (all
// of it: name, uid, groups, extra) list the scope's type in its namespace
// ("" for every namespace, or a cluster-scoped type). It is the hash of a
// JSON encoding, so that no two questions share a key (groups joined by
// "," did: one group "g1,g2" was taken for the two groups g1 and g2) and
// a key is small whatever the caller sends.
func decisionKey(user *authnv1.UserInfo, s history.Scope) [32]byte {
	raw, _ := json.Marshal(struct {
		User  *authnv1.UserInfo
		Scope history.Scope
	}{user, s})
	return sha256.Sum256(raw)
}

// NewAccess checks callers with the API server kube talks to; kubediff's
// own identity needs create on tokenreviews and subjectaccessreviews
// (the chart binds system:auth-delegator).
func NewAccess(kube kubernetes.Interface, log *slog.Logger) *Access {
	return &Access{kube: kube, log: log, now: time.Now,
		users: map[[32]byte]cached[*authnv1.UserInfo]{}, decisions: map[[32]byte]cached[bool]{}}
}

// errUnauthenticated is a request without a valid bearer token: 401.
var errUnauthenticated = errors.New("unauthenticated: send your Kubernetes bearer token (Authorization: Bearer …); kubediff's CLI sends your kubeconfig's")

// errReviewFailed is a review the API server did not answer: 503. The
// API server's words (which name kubediff's own identity) go to the log.
var errReviewFailed = errors.New("kubediff cannot check callers with the API server right now; try again later")

// vouchedUser is the context key of a caller someone kubediff trusts has
// authenticated: the API server's front proxy (pkg/apiservice).
type vouchedUser struct{}

// WithUser returns ctx saying user sent the request, as authenticated by
// the API server. Only kubediff's own handlers may call it: nothing a
// caller sends can set it.
func WithUser(ctx context.Context, user *authnv1.UserInfo) context.Context {
	return context.WithValue(ctx, vouchedUser{}, user)
}

// Authenticate returns who sent r.
func (a *Access) Authenticate(r *http.Request) (*authnv1.UserInfo, error) {
	if user, ok := r.Context().Value(vouchedUser{}).(*authnv1.UserInfo); ok {
		return user, nil
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		return nil, errUnauthenticated
	}
	key := sha256.Sum256([]byte(token))
	a.mu.Lock()
	if c, ok := a.users[key]; ok && a.now().Before(c.until) {
		a.mu.Unlock()
		return c.value, nil
	}
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(r.Context(), reviewTimeout)
	defer cancel()
	review, err := a.kube.AuthenticationV1().TokenReviews().Create(ctx,
		&authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if a.reviewed(err) != nil {
		return nil, errReviewFailed // the details are logged, not told to callers
	}
	if !review.Status.Authenticated {
		return nil, errUnauthenticated
	}
	user := &review.Status.User
	a.mu.Lock()
	keep(a.users, key, cached[*authnv1.UserInfo]{user, a.now().Add(accessTTL)}, a.now())
	a.mu.Unlock()
	return user, nil
}

// MayList says whether user may list group/resource in namespace: a
// grant over every namespace answers for each of them. An error says the
// API server could not be asked: the caller must not take it for a no.
func (a *Access) MayList(ctx context.Context, user *authnv1.UserInfo, group, resource, namespace string) (bool, error) {
	if a == nil {
		return true, nil // a state dir's reader (NewHandler)
	}
	if ok, err := a.allowed(ctx, user, group, resource, ""); ok || err != nil {
		return ok, err
	}
	if namespace == "" {
		return false, nil
	}
	return a.allowed(ctx, user, group, resource, namespace)
}

func (a *Access) allowed(ctx context.Context, user *authnv1.UserInfo, group, resource, namespace string) (bool, error) {
	if ok, known := a.known(user, history.Scope{Group: group, Resource: resource, Namespace: namespace}); known {
		return ok, nil
	}
	return a.review(ctx, user, history.Scope{Group: group, Resource: resource, Namespace: namespace})
}

// known returns a decision made within accessTTL, if there is one.
func (a *Access) known(user *authnv1.UserInfo, s history.Scope) (allowed, known bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.decisions[decisionKey(user, s)]
	if !ok || !a.now().Before(c.until) {
		return false, false
	}
	return c.value, true
}

// review asks the API server whether user may list s, and keeps the
// answer for accessTTL.
func (a *Access) review(ctx context.Context, user *authnv1.UserInfo, s history.Scope) (bool, error) {
	group, resource, namespace := s.Group, s.Resource, s.Namespace
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	extra := map[string]authzv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authzv1.ExtraValue(v)
	}
	review, err := a.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
		ResourceAttributes: &authzv1.ResourceAttributes{Verb: "list", Group: group, Resource: resource, Namespace: namespace},
	}}, metav1.CreateOptions{})
	if a.reviewed(err) != nil {
		return false, errReviewFailed // not cached: asked again next time
	}
	a.mu.Lock()
	keep(a.decisions, decisionKey(user, s), cached[bool]{review.Status.Allowed, a.now().Add(accessTTL)}, a.now())
	a.mu.Unlock()
	return review.Status.Allowed, nil
}

// reviewed logs a failing review once per episode, and its healing.
func (a *Access) reviewed(err error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case err != nil && !a.failing:
		a.log.Warn("history API: cannot review callers' access with the API server; queries get 503 until it answers", "err", err)
	case err == nil && a.failing:
		a.log.Info("history API: access reviews work again")
	}
	a.failing = err != nil
	return err
}

// maxCached is how many identities, and how many decisions, are kept at
// most: many callers, or one asking many questions, never grow the
// caches past it.
const maxCached = 10000

// keep caches v at k. A full cache first drops what has expired, then,
// if still full, a tenth of its entries (any: map order), so that its
// size is bounded and the cost of making room is spread over many calls.
func keep[K comparable, V any](m map[K]cached[V], k K, v cached[V], now time.Time) {
	if _, ok := m[k]; !ok && len(m) >= maxCached {
		for key, c := range m {
			if !now.Before(c.until) {
				delete(m, key)
			}
		}
		for key := range m {
			if len(m) < maxCached-maxCached/10 {
				break
			}
			delete(m, key)
		}
	}
	m[k] = v
}

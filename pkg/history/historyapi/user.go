package historyapi

import (
	"context"
	"errors"
	"time"

	authnv1 "k8s.io/api/authentication/v1"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/diff"
	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/history/blame"
	"github.com/kubediff/kubediff/pkg/history/restore"
)

// ErrForbidden says the caller's RBAC does not let them list the type
// there.
var ErrForbidden = errors.New("your Kubernetes RBAC does not let you list that type there")

// UserSource is a history as one caller may see it: only what their
// Kubernetes RBAC lets them list (the MCP server on kubediff's HTTP
// address answers through it).
type UserSource struct {
	Reader Store
	Access *Access
	User   *authnv1.UserInfo
	// Rules are the diff rules the history was kept under (nil: the
	// built-in ones).
	Rules *diff.Differ
	// turns are the HTTP API's (Handler.SourceFor), so that MCP's
	// callers share its bound; nil: reads at once.
	turns turns
}

// SourceFor is the history as user may see it, read in the same turns
// as the API's queries: MCP's tools on kubediff's HTTP address answer
// through it.
func (h *Handler) SourceFor(user *authnv1.UserInfo) Source {
	return UserSource{Reader: h.reader, Access: h.access, User: user, Rules: h.rules, turns: h.turns}
}

// read runs a read of the history in a turn, when the source has turns.
func read[T any](ctx context.Context, t turns, work func() (T, error)) (T, error) {
	if t == nil {
		return work()
	}
	return inTurn(ctx, t, work)
}

// Records implements Source: what the user may see is decided before the
// history is read.
func (u UserSource) Records(ctx context.Context, q history.Query) (history.Page, error) {
	q, err := visibleQuery(ctx, u.Reader, u.Access, u.User, q)
	if err != nil {
		return history.Page{}, err
	}
	return read(ctx, u.turns, func() (history.Page, error) { return u.Reader.Records(q) })
}

// At implements Source: the kept state, through the current redaction
// rules, as Local answers it.
func (u UserSource) At(ctx context.Context, id change.ObjectID, t time.Time) ([]byte, error) {
	if err := u.mayList(ctx, id); err != nil {
		return nil, err
	}
	return read(ctx, u.turns, func() ([]byte, error) { return keptAt(u.Reader, id, t) })
}

// Blame implements Source.
func (u UserSource) Blame(ctx context.Context, id change.ObjectID, t time.Time, all bool) (blame.Blame, error) {
	if err := u.mayList(ctx, id); err != nil {
		return blame.Blame{}, err
	}
	return read(ctx, u.turns, func() (blame.Blame, error) { return blameOf(u.Reader, id, t, all) })
}

// Restore implements Source: the owners it checks are read as the user
// may see them.
func (u UserSource) Restore(ctx context.Context, id change.ObjectID, t time.Time) (restore.Manifest, error) {
	return restoreFrom(ctx, u, u.Rules, id, t)
}

// mayList is nil when the user may list the object's type in its
// namespace, else why not.
func (u UserSource) mayList(ctx context.Context, id change.ObjectID) error {
	group, resource, namespace, _ := id.Parts()
	if err := checkNamespace(namespace); err != nil {
		return err
	}
	ok, err := u.Access.MayList(ctx, u.User, group, resource, namespace)
	switch {
	case err != nil:
		return err
	case !ok:
		return ErrForbidden
	}
	return nil
}

// Resolve implements Source.
func (u UserSource) Resolve(_ context.Context, name string) ([]discovery.Resource, error) {
	return u.Reader.Resolve(name)
}

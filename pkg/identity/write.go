// Package identity says who made each change: sources (the API server's
// audit webhook, its audit log file, an admission observer) note each
// write they see with the user who sent it, and the Book joins those
// writes to the records the watch makes of them, by the object's uid and
// resourceVersion where the source has them, never by guessing.
//
// Nothing of a request but its identity and the keys of the join is kept:
// request and response bodies (a Secret's data, a TokenReview's token)
// are read for their metadata and dropped.
package identity

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	"github.com/kubediff/kubediff/pkg/record"
)

// Write is one write to the API server as a source saw it: who sent it,
// to which object, and the resourceVersions that tie it to a watch event.
type Write struct {
	// Source names where it came from: audit-webhook, audit-log or
	// admission.
	Source string
	// ID is the source's own id (the audit ID, the admission request's
	// UID), so that a replayed or repeated note counts once.
	ID   string
	Time time.Time
	User record.User
	// Verb is the request's verb: create, update, patch or delete.
	Verb string
	// Object: resource (plural, "deployments"), subresource ("scale",
	// "status", "" for the object itself), namespace, name and uid as far
	// as the source knows them.
	Group, Resource, Subresource string
	Namespace, Name, UID         string
	// ResourceVersion is the version the write produced (an audit
	// event's response object); empty when the source does not have it.
	ResourceVersion string
	// PreviousResourceVersion is the version the write replaced (an
	// admission request's old object); empty when the source does not
	// have it.
	PreviousResourceVersion string
}

// Noter takes the writes sources see. Note must not block for long: it
// is called on a source's request or read path.
type Noter interface {
	Note(Write)
}

// Bounds of what a note keeps of a user. The API server sets no bound
// on a user's name or groups (an authenticating proxy or webhook may
// pass anything), and every record, history row and sink message
// repeats them. A longer name is not cut, which could make it another
// user's: the note names no one. Groups past the bounds are left out.
const (
	MaxUserNameBytes  = 1024
	MaxGroups         = 64
	MaxGroupNameBytes = 256
	MaxUserAgentBytes = 256
)

// BoundedUser is u within the bounds above: no name when the name is
// too long, only the groups that fit, the user agent cut.
func BoundedUser(u record.User) record.User {
	if len(u.Name) > MaxUserNameBytes {
		return record.User{}
	}
	if len(u.UserAgent) > MaxUserAgentBytes {
		u.UserAgent = strings.ToValidUTF8(u.UserAgent[:MaxUserAgentBytes], "")
	}
	fits := func(g string) bool { return len(g) <= MaxGroupNameBytes }
	if len(u.Groups) <= MaxGroups && !slices.ContainsFunc(u.Groups, func(g string) bool { return !fits(g) }) {
		return u
	}
	groups := make([]string, 0, MaxGroups)
	for _, g := range u.Groups {
		if fits(g) && len(groups) < MaxGroups {
			groups = append(groups, g)
		}
	}
	u.Groups = groups
	return u
}

// boundedID keeps an ID of any length in at most 32 bytes: a source's
// ID is only compared, never shown.
func boundedID(id string) string {
	if len(id) <= 64 {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:16])
}

// sizeOf is about what a note of w holds in memory.
func sizeOf(w Write) int {
	n := 300 + len(w.ID) + len(w.User.Name) + len(w.User.UserAgent) + len(w.Namespace) + len(w.Name)
	for _, g := range w.User.Groups {
		n += 16 + len(g)
	}
	return n
}

// NewUser is the user of a request as the API server authenticated it.
// A ServiceAccount's name (system:serviceaccount:NS:NAME) is split into
// its namespace and name.
func NewUser(name string, groups []string) record.User {
	u := record.User{Name: name, Groups: groups}
	if rest, ok := strings.CutPrefix(name, "system:serviceaccount:"); ok {
		if ns, sa, ok := strings.Cut(rest, ":"); ok && ns != "" && sa != "" {
			u.ServiceAccount = &record.ServiceAccount{Namespace: ns, Name: sa}
		}
	}
	return u
}

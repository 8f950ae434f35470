// Package change holds what one observed change is: the resource type it
// belongs to, the object's states before and after, and the object's id
// across versions of its type (ObjectID). It sits low, below
// the watcher that makes events and the diff that reads them, so that the
// diff engine (and whatever else only reads changes: rules, the history's
// readers) depends on neither the watcher, client-go's caches nor the
// state dir's database. A dependency test in test/tree guards it.
package change

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource is one watchable type, as discovery found it.
type Resource struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
	Singular   string
	ShortNames []string
}

// APIVersion is the group/version as objects spell it ("v1", "apps/v1").
func (r Resource) APIVersion() string { return r.GVR.GroupVersion().String() }

// String names the resource the way kubectl does: "deployments.apps".
func (r Resource) String() string {
	if r.GVR.Group == "" {
		return r.GVR.Resource
	}
	return r.GVR.Resource + "." + r.GVR.Group
}

// Matches reports whether name designates this resource, as kubectl would
// resolve it: plural, singular, kind or short name, optionally qualified
// by group ("deployments.apps") or by version and group
// ("deployments.v1.apps"), case-insensitively.
func (r Resource) Matches(name string) bool {
	name = strings.ToLower(strings.TrimSpace(name))
	base, qualifier, qualified := strings.Cut(name, ".")
	if !qualified {
		return r.matchesBase(base)
	}
	if !r.matchesBase(base) {
		return false
	}
	group := strings.ToLower(r.GVR.Group)
	if qualifier == group {
		return true
	}
	// "deployments.v1.apps": version then group.
	version, g, ok := strings.Cut(qualifier, ".")
	if ok && version == strings.ToLower(r.GVR.Version) && g == group {
		return true
	}
	// "pods.v1": a core resource with its version.
	return group == "" && qualifier == strings.ToLower(r.GVR.Version)
}

func (r Resource) matchesBase(name string) bool {
	if name == strings.ToLower(r.GVR.Resource) || name == strings.ToLower(r.Singular) || name == strings.ToLower(r.Kind) {
		return true
	}
	for _, s := range r.ShortNames {
		if name == strings.ToLower(s) {
			return true
		}
	}
	return false
}

// Type says what happened to an object.
type Type string

// Event types, as they appear in change records.
const (
	Added   Type = "added"
	Updated Type = "updated"
	Deleted Type = "deleted"
)

// Event is one observed change. Old is nil for Added, New is nil for
// Deleted (Old then holds the last state kubediff knew).
type Event struct {
	Type     Type
	Resource Resource
	Old, New *unstructured.Unstructured
	// FinalStateUnknown marks a deletion noticed only on relisting after a
	// watch gap: Old is the last state kubediff saw, not the deleted one.
	FinalStateUnknown bool
	// AfterGap marks a change found by comparing a list with the cache
	// after a gap: a restart with a state dir, or a watch whose
	// resourceVersion the server no longer had. States in between are
	// merged.
	AfterGap bool
}

// Object returns the newest known state: New, or Old for a deletion.
func (e Event) Object() *unstructured.Unstructured {
	if e.New != nil {
		return e.New
	}
	return e.Old
}

// ObjectID names an object across versions of its type:
// group/resource/namespace/name ("apps/deployments/default/web",
// "/namespaces//default" for a cluster-scoped core object). The history
// keeps an object's records under it, and an Event's record names the
// objects it is about by it.
type ObjectID string

// NewObjectID names an object.
func NewObjectID(group, resource, namespace, name string) ObjectID {
	return ObjectID(group + "/" + resource + "/" + namespace + "/" + name)
}

// Parts splits the id into group, resource, namespace and name.
func (id ObjectID) Parts() (group, resource, namespace, name string) {
	parts := strings.SplitN(string(id), "/", 4)
	if len(parts) != 4 {
		return "", "", "", ""
	}
	return parts[0], parts[1], parts[2], parts[3]
}

// Package rbacwords says in plain sentences what access a change of a
// Role, ClusterRole, RoleBinding or ClusterRoleBinding gave or took away:
// "ClusterRole ops now grants create on pods/exec in every namespace",
// "alice gains cluster-admin through ClusterRoleBinding x".
//
// A role's rules are compared as sets of permissions (API group,
// resource, resource name, verb; or non-resource URL and verb), so that
// reordering rules, splitting one rule in two or merging two says
// nothing. The sentences come most dangerous first (a wildcard,
// escalate, bind, impersonate, secrets, pods/exec, create on pods) and
// at most MaxSentences of them, then "and K more".
//
// It reads objects as unstructured maps (the watcher's decoded JSON) and
// imports nothing from Kubernetes, so the diff engine can call it on
// every RBAC change cheaply.
package rbacwords

import (
	"fmt"
	"strings"
)

// Group is the API group of the four kinds Describe reads.
const Group = "rbac.authorization.k8s.io"

// MaxSentences is how many sentences Describe returns at most before a
// last one saying how many more there were: a reviewer reads the most
// dangerous few, and the record's changes hold the rest.
const MaxSentences = 10

// Describes says whether Describe has anything to say about objects of
// this kind in this API group.
func Describes(group, kind string) bool {
	if group != Group {
		return false
	}
	switch kind {
	case "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding":
		return true
	}
	return false
}

// Describe returns the sentences saying what access changed when an
// object of kind (Role, ClusterRole, RoleBinding or ClusterRoleBinding)
// went from old to new; old is nil for an object created, new nil for one
// deleted. It returns nil when the access is the same, or for any other
// kind.
func Describe(kind string, old, new map[string]any) []string {
	var out []sentence
	switch kind {
	case "Role", "ClusterRole":
		out = describeRole(kind, old, new)
	case "RoleBinding", "ClusterRoleBinding":
		out = describeBinding(kind, old, new)
	default:
		return nil
	}
	return limit(out)
}

// sentence is one thing said, with what orders it: the more dangerous
// first, gains before losses.
type sentence struct {
	text   string
	danger int
	gained bool
}

// limit orders sentences and keeps MaxSentences of them, saying how many
// more there were.
func limit(ss []sentence) []string {
	if len(ss) == 0 {
		return nil
	}
	sortSentences(ss)
	n := min(len(ss), MaxSentences)
	out := make([]string, n, n+1)
	for i := range n {
		out[i] = ss[i].text
	}
	if more := len(ss) - n; more > 0 {
		out = append(out, fmt.Sprintf("and %d more", more))
	}
	return out
}

// objectName is how a sentence names an object: kind and namespace/name,
// or name alone for a cluster-scoped one ("Role dev/reader",
// "ClusterRole view").
func objectName(kind string, obj map[string]any) string {
	ns, name := metadata(obj)
	if ns == "" {
		return kind + " " + name
	}
	return kind + " " + ns + "/" + name
}

// metadata returns the object's namespace and name.
func metadata(obj map[string]any) (namespace, name string) {
	meta, _ := obj["metadata"].(map[string]any)
	namespace, _ = meta["namespace"].(string)
	name, _ = meta["name"].(string)
	return namespace, name
}

// anyList reads a list as decoded JSON holds it ([]any); a []string,
// as Go code may build an object, is read too.
func anyList(v any) []any {
	switch l := v.(type) {
	case []any:
		return l
	case []string:
		out := make([]any, len(l))
		for i, s := range l {
			out[i] = s
		}
		return out
	}
	return nil
}

// str is v if it is a string, else "".
func str(v any) string {
	s, _ := v.(string)
	return s
}

// joinList joins items for a sentence, naming at most maxListed of them:
// a role granting on forty resources is read by its first ones, and its
// record's changes list them all.
func joinList(items []string) string {
	if len(items) <= maxListed {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:maxListed], ", ") + fmt.Sprintf(" and %d more", len(items)-maxListed)
}

const maxListed = 12

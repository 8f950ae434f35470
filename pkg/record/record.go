// Package record is kubediff's change record: what stdout prints, log
// stacks index and every sink receives. It imports nothing from
// Kubernetes, so that a sink (one of kubediff's or someone else's)
// depends on this small package and not on client-go.
package record

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Record types.
const (
	Added   = "added"
	Updated = "updated"
	Deleted = "deleted"
)

// Operations on a field, named as in JSON Patch (RFC 6902).
const (
	OpAdd     = "add"
	OpRemove  = "remove"
	OpReplace = "replace"
)

// Change is one record: the contract that stdout, log stacks and webhooks
// receive. Its JSON form is documented in README.md; add fields, never
// rename or remove them.
type Change struct {
	Time            Timestamp `json:"time"`
	Type            string    `json:"type"`
	APIVersion      string    `json:"apiVersion"`
	Kind            string    `json:"kind"`
	Resource        string    `json:"resource"`
	Namespace       string    `json:"namespace"`
	Name            string    `json:"name"`
	UID             string    `json:"uid"`
	ResourceVersion string    `json:"resourceVersion"`
	// LastSeenResourceVersion is set, and ResourceVersion empty, for a
	// deletion noticed only after a watch gap: the deletion's own version
	// is unknown.
	LastSeenResourceVersion string `json:"lastSeenResourceVersion,omitempty"`
	// Labels are the object's labels, for routing and log queries.
	Labels map[string]string `json:"labels,omitempty"`
	// Owner is the object's controller (a Pod's ReplicaSet, a
	// ReplicaSet's Deployment), so a reader or a log query can group a
	// rollout's records with their cause.
	Owner *Owner `json:"owner,omitempty"`
	// Changed lists the changed fields' readable paths in one string
	// ("spec.replicas, data.k") because log stacks index scalars, not arrays.
	Changed string        `json:"changed,omitempty"`
	Changes []FieldChange `json:"changes,omitempty"`
	// Manager is who made the change, when the server recorded it.
	Manager *Manager `json:"manager,omitempty"`
	// Patch is the RFC 6902 patch from old to new, when asked for.
	Patch []PatchOperation `json:"patch,omitempty"`
	// Unified is a unified YAML diff for text output, when asked for.
	Unified string `json:"-"`
}

// ObjectName is the object as kubectl names it: namespace/name, or name
// alone for a cluster-scoped object.
func (c Change) ObjectName() string {
	if c.Namespace == "" {
		return c.Name
	}
	return c.Namespace + "/" + c.Name
}

// Group is the object's API group, "" for the core group.
func (c Change) Group() string {
	group, _, found := strings.Cut(c.APIVersion, "/")
	if !found {
		return ""
	}
	return group
}

// LogAttrs are log attributes naming the record's object, never its
// values.
func (c Change) LogAttrs() []any {
	return []any{"type", c.Type, "kind", c.Kind, "namespace", c.Namespace, "name", c.Name, "resourceVersion", c.ResourceVersion}
}

// Owner is the controller of an object, in the object's namespace.
type Owner struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// String reads as kubectl names it: ReplicaSet/web-5d4f.
func (o Owner) String() string { return o.Kind + "/" + o.Name }

// maxChangedFields caps the one-string summary; the changes list always
// carries every change.
const maxChangedFields = 50

// Summarize is the Changed string for changes: each field's readable path
// once, comma-separated, at most 50.
func Summarize(changes []FieldChange) string {
	var fields []string
	seen := map[string]bool{}
	for _, c := range changes {
		if seen[c.Field] {
			continue
		}
		seen[c.Field] = true
		fields = append(fields, c.Field)
	}
	if len(fields) > maxChangedFields {
		more := len(fields) - maxChangedFields
		fields = append(fields[:maxChangedFields], fmt.Sprintf("… and %d more", more))
	}
	return strings.Join(fields, ", ")
}

// FieldChange is one changed field. From is absent for an add, To for a
// remove.
type FieldChange struct {
	Op   string `json:"op"`
	Path string `json:"path"` // RFC 6901 JSON Pointer into the object
	// Field is the readable form of Path: spec.containers[0].image.
	Field string `json:"field"`
	From  any    `json:"from,omitempty"`
	To    any    `json:"to,omitempty"`
}

// Manager is the field manager that made a change, as the API server
// recorded it in managedFields.
type Manager struct {
	Name        string `json:"name"`
	Operation   string `json:"operation,omitempty"`
	Time        string `json:"time,omitempty"`
	Subresource string `json:"subresource,omitempty"`
}

// PatchOperation is one RFC 6902 operation.
type PatchOperation struct {
	Operation string `json:"op"`
	Path      string `json:"path"`
	Value     any    `json:"value,omitempty"`
}

// Timestamp is a time encoded as RFC 3339 with milliseconds, in UTC.
type Timestamp time.Time

// MarshalJSON implements json.Marshaler.
func (t Timestamp) MarshalJSON() ([]byte, error) {
	return []byte(`"` + t.String() + `"`), nil
}

// UnmarshalJSON implements json.Unmarshaler, for programs reading records.
func (t *Timestamp) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	parsed, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	*t = Timestamp(parsed)
	return nil
}

// String formats the time as the JSON form does, without quotes.
func (t Timestamp) String() string {
	return time.Time(t).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

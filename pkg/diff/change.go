// Package diff turns watcher events into Change records: what object
// changed, and for updates which fields, as JSON Pointers with their old
// and new values. Ignore rules decide which fields are not worth reporting.
package diff

import (
	"encoding/json"
	"time"
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

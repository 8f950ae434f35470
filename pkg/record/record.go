// Package record is kubediff's change record: what stdout prints, log
// stacks index and every sink receives. It imports nothing from
// Kubernetes, so that a sink (one of kubediff's or someone else's)
// depends on this small package and not on client-go.
package record

import (
	"encoding/json"
	"fmt"
	"strconv"
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
// receive. Its JSON form is documented in docs/record-schema.md; add fields, never
// rename or remove them.
type Change struct {
	// ID names what the record describes, the same from every replica and
	// after a restart, so a receiver can drop a duplicate (see StableID).
	ID              string    `json:"id,omitempty"`
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
	// AfterGap marks a change observed after a gap in the watch (kubediff
	// restarted with a state dir, or the server's event history ran out),
	// found by comparing a list with the last state kubediff knew: states
	// in between are merged into one record.
	AfterGap bool `json:"afterGap,omitempty"`
	// NamespaceDeleting marks a deletion made while the object's
	// namespace was being deleted: the object went with its namespace
	// (the namespace controller deletes each object in it), and the
	// namespace's own record is the one that matters (docs/rules.md).
	NamespaceDeleting bool `json:"namespaceDeleting,omitempty"`
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
	// User is the person or service account whose request made the
	// change, from the audit trail or the admission observer (see
	// docs/identity.md); absent when no source said, never guessed.
	User *User `json:"user,omitempty"`
	// Release is the release or sync the object belongs to, when it
	// carries a Helm, Argo CD or Flux mark, as it stood when the write
	// was made (see docs/why.md).
	Release *Release `json:"release,omitempty"`
	// GitOps says whether the object's GitOps owner made the change
	// (via sync) or someone else changed what it declares (via
	// outside), with the fields that drifted and the outside change a
	// sync put back (see docs/drift.md); absent when the object has no
	// GitOps owner or the write touched nothing it declares.
	GitOps *GitOps `json:"gitops,omitempty"`
	// Access says in sentences what access the change gave or took
	// away, for a Role, ClusterRole, RoleBinding or ClusterRoleBinding
	// ("alice gains cluster-admin through ClusterRoleBinding x"), the
	// most dangerous first, at most ten and "and K more"
	// (docs/rbac.md); absent for other kinds and when access is the same.
	Access []string `json:"access,omitempty"`
	// Patch is the RFC 6902 patch from old to new, when asked for.
	Patch []PatchOperation `json:"patch,omitempty"`
	// Unified is a unified YAML diff for text output, when asked for.
	Unified string `json:"-"`
	// Cluster is where the object lives, so that records of several
	// clusters can meet in one log stack, topic or channel.
	Cluster *Cluster `json:"cluster,omitempty"`
	// Rules are the names of the configured rules (docs/rules.md) the
	// record matched, Severity the highest of their severities (info,
	// warning, critical), and Summary the most severe matched rule's
	// summary, when it has one.
	Rules    []string `json:"rules,omitempty"`
	Severity string   `json:"severity,omitempty"`
	Summary  string   `json:"summary,omitempty"`
	// Event is set on a record of type "event" (EventRecord): what a
	// Kubernetes Event said about the object the record names
	// (docs/why.md). Such a record changes nothing: it has no changes.
	Event *Event `json:"event,omitempty"`
}

// Cluster names a cluster: Name as people call it (the kubeconfig
// context, or clusterName), ID as it stays (the kube-system namespace's
// UID, the usual cluster id).
type Cluster struct {
	Name string `json:"name,omitempty"`
	ID   string `json:"id,omitempty"`
}

// StableID is the record's id: the object's uid, the resourceVersion the
// record brings it to, and the record type ("6b64…/207/updated"). A
// deletion noticed only after a watch gap has no resourceVersion of its
// own: its id uses the last one seen ("6b64…/last-190/deleted").
func (c Change) StableID() string {
	rv := c.ResourceVersion
	if rv == "" && c.LastSeenResourceVersion != "" {
		rv = "last-" + c.LastSeenResourceVersion
	}
	return c.UID + "/" + rv + "/" + c.Type
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

// StatusOnly reports whether there are changes and every one is under
// /status: what a controller or kubelet reports, not what a person asked
// for.
func StatusOnly(changes []FieldChange) bool {
	for _, fc := range changes {
		if fc.Path != "/status" && !strings.HasPrefix(fc.Path, "/status/") {
			return false
		}
	}
	return len(changes) > 0
}

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
	// Lines is set when a string holding several lines (a config file in
	// a ConfigMap) was replaced: the changed lines with some context, so a
	// reader need not compare two long strings by eye.
	Lines *LineDiff `json:"lines,omitempty"`
	// Truncated says that From or To (or a string inside them) was too
	// long to carry whole and holds only an excerpt around the first
	// difference, marked with "…" where it was cut. The sizes and hashes
	// below then describe the full values, so a reader can still tell
	// them apart and check them against a copy.
	Truncated bool `json:"truncated,omitempty"`
	// FromBytes and ToBytes are the full values' sizes (a string's UTF-8
	// bytes, else its compact JSON), set when Truncated for each side
	// present, and beside Lines (which From and To are not: the hunks
	// carry the changed lines). Pointers, because an empty string's size 0 must still show.
	FromBytes *int `json:"fromBytes,omitempty"`
	ToBytes   *int `json:"toBytes,omitempty"`
	// FromSHA256 and ToSHA256 are the first 8 bytes, in hex, of the
	// SHA-256 of the same bytes, set when Truncated for each side present.
	FromSHA256 string `json:"fromSHA256,omitempty"`
	ToSHA256   string `json:"toSHA256,omitempty"`
}

// Sizes describes a truncated change's full values for people: their
// sizes, "1.0 MiB → 1.0 MiB" (one size for an add or a remove), or ""
// when nothing was cut.
func (fc FieldChange) Sizes() string {
	if !fc.Truncated {
		return ""
	}
	var parts []string
	for _, n := range []*int{fc.FromBytes, fc.ToBytes} {
		if n != nil {
			parts = append(parts, byteSize(*n))
		}
	}
	return strings.Join(parts, " → ")
}

// byteSize is n in B, KiB or MiB, with the larger unit from 1,000 of the
// smaller on, so that 1,048,570 bytes read 1.0 MiB rather than 1024.0 KiB.
func byteSize(n int) string {
	switch {
	case n < 1000:
		return strconv.Itoa(n) + " B"
	case n < 1000<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
	}
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
}

// LineDiff is a line diff of a replaced string holding several lines,
// in unified diff's terms: hunks of changed lines with up to three lines
// of context around them.
type LineDiff struct {
	// FromLines and ToLines count the lines of the full old and new value
	// (a final newline ends the last line rather than starting another).
	FromLines int `json:"fromLines"`
	ToLines   int `json:"toLines"`
	// Hunks are the changed regions, in order.
	Hunks []Hunk `json:"hunks"`
	// Truncated says the hunks stop short: the changed lines were too many
	// to carry, and only the first ones are here.
	Truncated bool `json:"truncated,omitempty"`
}

// Hunk is one region of changed lines and the context around it.
type Hunk struct {
	// FromLine and ToLine are the 1-based numbers of the hunk's first line
	// in the old and new value (with no line on that side: the line it
	// stands before); FromCount and ToCount how many of Lines are in each.
	FromLine  int `json:"fromLine"`
	FromCount int `json:"fromCount"`
	ToLine    int `json:"toLine"`
	ToCount   int `json:"toCount"`
	// Lines are the hunk's lines without their newline, each prefixed
	// with "  " (context, in both), "- " (old only) or "+ " (new only); a
	// line "\ no newline at end" follows a line that ends its value
	// without a newline while the other value's last line has one. Very
	// long lines are cut around their first difference and marked "…".
	Lines []string `json:"lines"`
}

// Header is the hunk's header as unified diffs write it, "@@ -9,7 +9,8 @@",
// where an empty side is numbered by the line before it.
func (h Hunk) Header() string {
	return "@@ -" + hunkRange(h.FromLine, h.FromCount) + " +" + hunkRange(h.ToLine, h.ToCount) + " @@"
}

func hunkRange(line, count int) string {
	if count == 0 {
		line--
	}
	if count == 1 {
		return strconv.Itoa(line)
	}
	return strconv.Itoa(line) + "," + strconv.Itoa(count)
}

// Manager is the field manager that made a change, as the API server
// recorded it in managedFields.
type Manager struct {
	Name        string `json:"name"`
	Operation   string `json:"operation,omitempty"`
	Time        string `json:"time,omitempty"`
	Subresource string `json:"subresource,omitempty"`
}

// User is who sent the request that made a change, as the API server
// authenticated them. UserAgent and SourceIP are set only when the
// configuration asks for them (identity.userAgent, identity.sourceIP).
type User struct {
	Name   string   `json:"name"`
	Groups []string `json:"groups,omitempty"`
	// ServiceAccount is set when the user is a ServiceAccount
	// (system:serviceaccount:NAMESPACE:NAME).
	ServiceAccount *ServiceAccount `json:"serviceAccount,omitempty"`
	UserAgent      string          `json:"userAgent,omitempty"`
	SourceIP       string          `json:"sourceIP,omitempty"`
}

// ServiceAccount names a ServiceAccount.
type ServiceAccount struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
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

package diff

import (
	"strings"

	"github.com/kubediff/kubediff/pkg/managedfields"
	"github.com/kubediff/kubediff/pkg/record"
)

// manager is a managedFields entry as a record names it.
type manager = record.Manager

// entry is a managedFields entry: the manager it names and the fields it
// owns (its field set, slim or whole).
type entry struct {
	manager
	owned map[string]any
}

// attribute names the manager behind a write that made changes (none for
// a creation). The API server stamps the time of the writer's entry when
// its write changed the object (an Update that set or added a field, an
// Apply that changed anything), and of no other, so the writer is the one
// entry that is new or whose time moved between old and new. That entry
// is named even when its field set covers none of the changes: an Apply
// that drops a field (Flux, Argo CD, `kubectl apply --server-side`) moves
// the applier's time and leaves the removed field owned by no one, and
// its time is the proof.
//
// Many writes move no time: a repeated write of a field a manager owns
// already within the same second, every write through the scale
// subresource (its entry never has a time), an Update that only removes
// fields. Then, or when several moved (a record covering more than one
// write), the entries that own a changed field are the answer, the newest
// of them: an Update leaves the fields it set owned by its writer alone.
// Below the levels kept, where a field set cannot tell a field from its
// sibling, only an entry that alone may own a field the change set is
// named. When none owns a changed field the record names no one (nil): the
// writer left no entry behind, as `kubectl scale --replicas=0` does (the
// Scale's spec.replicas is omitempty, so the zero is in no field set and
// the scale entry goes), and the newest other entry would be a guess.
//
// A status-subresource entry is never credited with a change beyond
// status, which it cannot have made. Ties go to the entry whose
// subresource fits the change: status for a change under /status only,
// the main resource otherwise. Nil also when the object has no
// managedFields, or only ones that cannot have made the change.
func attribute(oldObj, newObj map[string]any, changes []record.FieldChange) *manager {
	statusOnly := record.StatusOnly(changes)
	beyondStatus := len(changes) > 0 && !statusOnly
	var candidates []entry
	for _, e := range entries(newObj) {
		if !(beyondStatus && e.Subresource == "status") {
			candidates = append(candidates, e)
		}
	}
	oldTimes := map[manager]string{}
	for _, e := range entries(oldObj) {
		oldTimes[identity(e.manager)] = e.Time
	}
	var moved []entry
	for _, e := range candidates {
		if t, seen := oldTimes[identity(e.manager)]; oldObj == nil || !seen || t != e.Time {
			moved = append(moved, e)
		}
	}
	if len(moved) == 1 {
		return &moved[0].manager
	}
	if len(moved) > 1 {
		candidates = moved
	}
	if len(changes) == 0 {
		// A creation: nothing to own, the newest entry made it.
		return newest(candidates, statusOnly)
	}
	secret := isSecret(newObj)
	if owners := owning(candidates, writtenAt(changes, secret, false), managedfields.Owned); len(owners) > 0 {
		return newest(owners, statusOnly)
	}
	// Where the field sets cannot tell (below the levels kept, under a
	// list), an entry that alone may own a field set by the change is its
	// writer: a set field is left owned by its writer only. Several may
	// own it (a container's fields are shared by every tool that wrote
	// the pod template): the newest would be a guess. A removed field is
	// owned by no one after the write, so who may own beside it says
	// nothing.
	if maybe := owning(candidates, writtenAt(changes, secret, true), managedfields.MaybeOwned); len(maybe) == 1 {
		return &maybe[0].manager
	}
	return nil
}

// owning are the entries whose ownership of one of the paths is at
// least least.
func owning(candidates []entry, paths []string, least managedfields.Ownership) []entry {
	var out []entry
	for _, e := range candidates {
		for _, p := range paths {
			if managedfields.OwnershipOf(e.owned, p) >= least {
				out = append(out, e)
				break
			}
		}
	}
	return out
}

// writtenAt are the paths a writer of the changes owns afterwards: each
// change's, and for a Secret's data the same key of stringData, which
// the API server turns into data after recording who wrote it (a Helm
// chart's Secret). setOnly leaves out removals.
func writtenAt(changes []record.FieldChange, secret, setOnly bool) []string {
	out := make([]string, 0, len(changes))
	for _, c := range changes {
		if setOnly && c.Op == record.OpRemove {
			continue
		}
		out = append(out, c.Path)
		if key, ok := strings.CutPrefix(c.Path, "/data/"); ok && secret {
			out = append(out, "/stringData/"+key)
		}
	}
	return out
}

// isSecret says whether obj is a core Secret.
func isSecret(obj map[string]any) bool {
	return obj["kind"] == "Secret" && obj["apiVersion"] == "v1"
}

// newest is the entry with the latest time, ties going to the one whose
// subresource fits the change; nil when there is none.
func newest(candidates []entry, statusOnly bool) *manager {
	fits := func(m manager) bool { return (m.Subresource == "status") == statusOnly }
	var best *manager
	for i := range candidates {
		m := &candidates[i].manager
		if best == nil || m.Time > best.Time || (m.Time == best.Time && fits(*m) && !fits(*best)) {
			best = m
		}
	}
	return best
}

// identity is a manager entry without its time. Times are RFC 3339 in UTC
// with second precision, so they order as strings.
func identity(m manager) manager {
	m.Time = ""
	return m
}

// managerName is a field manager's name as records give it. Helm is one
// tool under two names: what it applies carries the field manager it
// sets, helm, and what its storage driver writes (the release Secrets)
// carries client-go's default, its user agent's first word, Helm.
func managerName(name string) string {
	if name == "Helm" {
		return "helm"
	}
	return name
}

func entries(obj map[string]any) []entry {
	meta, _ := obj["metadata"].(map[string]any)
	list, _ := meta["managedFields"].([]any)
	out := make([]entry, 0, len(list))
	for _, e := range list {
		m, _ := e.(map[string]any)
		name, _ := m["manager"].(string)
		if name == "" {
			continue
		}
		op, _ := m["operation"].(string)
		t, _ := m["time"].(string)
		sub, _ := m["subresource"].(string)
		owned, _ := m[managedfields.FieldsKey].(map[string]any)
		out = append(out, entry{manager: manager{Name: managerName(name), Operation: op, Time: t, Subresource: sub}, owned: owned})
	}
	return out
}

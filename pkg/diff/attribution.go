package diff

import (
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
// a creation). The API server stamps the time of each entry whose owned
// fields grew, so the writer is the one entry that is new or whose time
// moved between old and new. A manager repeating a write of fields it
// owns already (a second `kubectl scale`) moves no time, though: then, or
// when several moved, the entries that own a changed field are the
// answer, the newest of them, and failing those the newest entry. A
// status-subresource entry is never credited with a change beyond status,
// which it cannot have made. Ties go to the entry whose subresource fits
// the change: status for a change under /status only, the main resource
// otherwise. Nil when the object has no managedFields, or only ones that
// cannot have made the change.
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
	if owners := owning(candidates, changes); len(owners) > 0 {
		candidates = owners
	}
	return newest(candidates, statusOnly)
}

// owning are the entries that own one of the changed fields.
func owning(candidates []entry, changes []record.FieldChange) []entry {
	var out []entry
	for _, e := range candidates {
		for _, c := range changes {
			if managedfields.Owns(e.owned, c.Path) {
				out = append(out, e)
				break
			}
		}
	}
	return out
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
		out = append(out, entry{manager: manager{Name: name, Operation: op, Time: t, Subresource: sub}, owned: owned})
	}
	return out
}

package diff

import "github.com/kubediff/kubediff/pkg/record"

// manager is a managedFields entry as a record names it.
type manager = record.Manager

// attribute names the manager behind a write. The API server stamps the
// time of each manager entry it touches, so the writer is the entry that is
// new or whose time moved between old and new; when none moved (two writes
// within one second by the same manager) the newest entry is the best
// answer. Ties go to the entry whose subresource fits the change: status
// for a change under /status only, the main resource otherwise. Nil when
// the object has no managedFields.
func attribute(oldObj, newObj map[string]any, statusOnly bool) *manager {
	newEntries := managers(newObj)
	if len(newEntries) == 0 {
		return nil
	}
	oldTimes := map[manager]string{}
	for _, m := range managers(oldObj) {
		oldTimes[identity(m)] = m.Time
	}
	fits := func(m *manager) bool { return (m.Subresource == "status") == statusOnly }
	better := func(a, b *manager) bool { // is a a better answer than b?
		if b == nil || a.Time != b.Time {
			return b == nil || a.Time > b.Time
		}
		return fits(a) && !fits(b)
	}
	var moved, newest *manager
	for i := range newEntries {
		m := &newEntries[i]
		if t, seen := oldTimes[identity(*m)]; oldObj == nil || !seen || t != m.Time {
			if better(m, moved) {
				moved = m
			}
		}
		if better(m, newest) {
			newest = m
		}
	}
	if moved != nil {
		return moved
	}
	return newest
}

// identity is a manager entry without its time. Times are RFC 3339 in UTC
// with second precision, so they order as strings.
func identity(m manager) manager {
	m.Time = ""
	return m
}

func managers(obj map[string]any) []manager {
	meta, _ := obj["metadata"].(map[string]any)
	entries, _ := meta["managedFields"].([]any)
	out := make([]manager, 0, len(entries))
	for _, e := range entries {
		m, _ := e.(map[string]any)
		name, _ := m["manager"].(string)
		if name == "" {
			continue
		}
		op, _ := m["operation"].(string)
		t, _ := m["time"].(string)
		sub, _ := m["subresource"].(string)
		out = append(out, manager{Name: name, Operation: op, Time: t, Subresource: sub})
	}
	return out
}

package diff

// Manager is the field manager that made a change, as the API server
// recorded it in managedFields.
type Manager struct {
	Name        string `json:"name"`
	Operation   string `json:"operation,omitempty"`
	Time        string `json:"time,omitempty"`
	Subresource string `json:"subresource,omitempty"`
}

// attribute names the manager behind a write. The API server stamps the
// time of each manager entry it touches, so the writer is the entry that is
// new or whose time moved between old and new; when none moved (two writes
// within one second by the same manager) the newest entry is the best
// answer. Ties go to the entry whose subresource fits the change: status
// for a change under /status only, the main resource otherwise. Nil when
// the object has no managedFields.
func attribute(oldObj, newObj map[string]any, statusOnly bool) *Manager {
	newEntries := managers(newObj)
	if len(newEntries) == 0 {
		return nil
	}
	oldTimes := map[Manager]string{}
	for _, m := range managers(oldObj) {
		oldTimes[m.identity()] = m.Time
	}
	fits := func(m *Manager) bool { return (m.Subresource == "status") == statusOnly }
	better := func(a, b *Manager) bool { // is a a better answer than b?
		if b == nil || a.Time != b.Time {
			return b == nil || a.Time > b.Time
		}
		return fits(a) && !fits(b)
	}
	var moved, newest *Manager
	for i := range newEntries {
		m := &newEntries[i]
		if t, seen := oldTimes[m.identity()]; oldObj == nil || !seen || t != m.Time {
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
func (m Manager) identity() Manager {
	m.Time = ""
	return m
}

func managers(obj map[string]any) []Manager {
	meta, _ := obj["metadata"].(map[string]any)
	entries, _ := meta["managedFields"].([]any)
	out := make([]Manager, 0, len(entries))
	for _, e := range entries {
		m, _ := e.(map[string]any)
		name, _ := m["manager"].(string)
		if name == "" {
			continue
		}
		op, _ := m["operation"].(string)
		t, _ := m["time"].(string)
		sub, _ := m["subresource"].(string)
		out = append(out, Manager{Name: name, Operation: op, Time: t, Subresource: sub})
	}
	return out
}

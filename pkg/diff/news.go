package diff

import (
	"slices"
	"strings"

	"github.com/kubediff/kubediff/pkg/record"
)

// A newsFilter is a default rule's test of whether a change is news,
// where that depends on values and not only the path (so an ignore path
// cannot say it): a Pod starting up, the counters a controller keeps, a
// condition's details when its status did not change. An update left
// with no change produces no record.
type newsFilter struct {
	rule string
	keep func(u *updateView, fc record.FieldChange) bool
}

// updateView is what a filter sees: both objects, and every change found.
type updateView struct {
	old, new map[string]any
	changes  []record.FieldChange
}

// keepNews returns the changes every filter keeps.
func keepNews(filters []newsFilter, oldObj, newObj map[string]any, changes []record.FieldChange) []record.FieldChange {
	if len(filters) == 0 {
		return changes
	}
	u := &updateView{old: oldObj, new: newObj, changes: changes}
	kept := make([]record.FieldChange, 0, len(changes))
	for _, fc := range changes {
		if !slices.ContainsFunc(filters, func(f newsFilter) bool { return !f.keep(u, fc) }) {
			kept = append(kept, fc)
		}
	}
	return kept
}

// segments splits a change's JSON Pointer (always well formed: kubediff
// made it).
func segments(fc record.FieldChange) []string {
	segs, _ := ParsePointer(fc.Path)
	return segs
}

// podNews keeps what a person would want to know of a Pod's life: its
// spec, a container restarting (with why it stopped), the Pod going from
// Ready to not Ready, and a phase that ends it (Failed, Succeeded,
// Unknown), or an eviction's reason. Starting up (scheduled, IPs,
// containers running, Ready), the graceful deletion's marks (the deletion
// record follows) and the scheduler's binding are not news.
func podNews(u *updateView, fc record.FieldChange) bool {
	segs := segments(fc)
	switch {
	case len(segs) >= 2 && segs[0] == "metadata" && (segs[1] == "deletionTimestamp" || segs[1] == "deletionGracePeriodSeconds"):
		return false
	case len(segs) == 2 && segs[0] == "spec" && segs[1] == "nodeName":
		return false
	case len(segs) == 0 || segs[0] != "status":
		return true
	case len(segs) == 2 && segs[1] == "phase":
		return slices.Contains([]any{"Failed", "Succeeded", "Unknown"}, fc.To)
	case len(segs) == 2 && (segs[1] == "reason" || segs[1] == "message"):
		return fc.Op != record.OpRemove
	case len(segs) >= 4 && strings.HasSuffix(segs[1], "ontainerStatuses"):
		// containerStatuses, initContainerStatuses, ephemeralContainerStatuses
		return segs[3] == "restartCount" || (segs[3] == "lastState" && restarted(u, segs[:3]))
	case len(segs) == 4 && segs[1] == "conditions" && segs[3] == "status":
		return conditionType(u.new, segs[2]) == "Ready" && fc.From == "True" && fc.To == "False"
	}
	return false
}

// restarted reports whether the container at prefix (/status/…/N) has
// a restartCount change in this update.
func restarted(u *updateView, prefix []string) bool {
	want := FormatPointer(append(slices.Clone(prefix), "restartCount"))
	return slices.ContainsFunc(u.changes, func(fc record.FieldChange) bool { return fc.Path == want })
}

// workloadNews keeps a workload's spec and metadata and its status
// conditions (conditionNews decides which), not the replica counters and
// observedGeneration its controller rewrites with every Pod that starts
// or stops. Each Pod's own addition and deletion is reported.
func workloadNews(_ *updateView, fc record.FieldChange) bool {
	segs := segments(fc)
	return len(segs) == 0 || segs[0] != "status" || (len(segs) >= 2 && segs[1] == "conditions")
}

// conditionNews keeps a condition's details (reason, message, times)
// only when its status changed in the same update: "Progressing" with a
// new reason but still True is bookkeeping; "Available" turning False is
// news, and its reason and message say why.
func conditionNews(u *updateView, fc record.FieldChange) bool {
	segs := segments(fc)
	if len(segs) != 4 || segs[0] != "status" || segs[1] != "conditions" || segs[3] == "status" || segs[3] == "type" {
		return true
	}
	status := FormatPointer([]string{"status", "conditions", segs[2], "status"})
	return slices.ContainsFunc(u.changes, func(c record.FieldChange) bool { return c.Path == status })
}

// endpointsNews drops the endpoints and ports of EndpointSlices and the
// subsets of Endpoints, which follow every Pod that becomes ready or goes
// away (those Pods' records say so); a slice created or deleted is still
// reported.
func endpointsNews(_ *updateView, fc record.FieldChange) bool {
	segs := segments(fc)
	return len(segs) == 0 || !slices.Contains([]string{"endpoints", "ports", "subsets"}, segs[0])
}

// conditionType returns the type of the condition at index i of
// obj's status.conditions.
func conditionType(obj map[string]any, i string) string {
	status, _ := obj["status"].(map[string]any)
	c, _ := child(status["conditions"], i).(map[string]any)
	t, _ := c["type"].(string)
	return t
}

// crdNews keeps what a person would want to know of a
// CustomResourceDefinition beyond its spec: a condition going wrong. The
// API server's own steps after an install (names accepted, established,
// stored versions, accepted names mirroring spec.names) and the marks of
// a deletion (the deletion record follows) are not news: installing or
// removing a CRD is one record, as applying it was one act.
func crdNews(u *updateView, fc record.FieldChange) bool {
	segs := segments(fc)
	switch {
	case len(segs) >= 2 && segs[0] == "metadata" && (segs[1] == "deletionTimestamp" || segs[1] == "finalizers"):
		return false
	case len(segs) < 2 || segs[0] != "status":
		return true
	case segs[1] == "acceptedNames" || segs[1] == "storedVersions":
		return false
	case segs[1] != "conditions":
		return true
	case len(segs) == 2: // the conditions list as a whole
		list, _ := fc.To.([]any)
		return fc.Op == record.OpRemove || slices.ContainsFunc(list, func(c any) bool { return !quietCRDCondition(c) })
	case len(segs) == 3: // one condition added or removed
		if fc.Op == record.OpRemove {
			return !quietCRDCondition(fc.From)
		}
		return !quietCRDCondition(fc.To)
	}
	// A field of a condition: quiet while the condition is a healthy step.
	status, _ := child(u.new["status"], "conditions").([]any)
	var c any
	if i := indexOf(segs[2]); i >= 0 && i < len(status) {
		c = status[i]
	}
	return !quietCRDCondition(c)
}

// quietCRDCondition says whether a CRD's condition is one of the API
// server's healthy steps (names accepted, installing, established) or the
// deletion under way.
func quietCRDCondition(c any) bool {
	m, _ := c.(map[string]any)
	switch m["type"] {
	case "NamesAccepted":
		return m["status"] == "True"
	case "Established": // or on its way: "Installing" until the names are served
		return m["status"] == "True" || m["reason"] == "Installing"
	case "Terminating":
		return true
	}
	return false
}

func indexOf(seg string) int {
	n := 0
	for _, r := range seg {
		if r < '0' || r > '9' {
			return -1
		}
		n = n*10 + int(r-'0')
	}
	return n
}

package drift

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubediff/kubediff/pkg/managedfields"
	"github.com/kubediff/kubediff/pkg/record"
)

// outside is the fact of a write by someone other than the owner, nil
// when it changed nothing the owner declares. Each declared field it
// left different from the declared state is drift, which stays open
// until a write puts it back; a field it brought back to its declared
// value closes that field's drift.
func (c *Classifier) outside(o owner, oldObj, newObj *unstructured.Unstructured, rec *record.Change) *record.GitOps {
	st := c.objects.get(rec.UID)
	changed := declaredChanges(o, st, oldObj, rec)
	changed = slices.DeleteFunc(changed, func(fc record.FieldChange) bool { return c.ignores.ignored(o, rec, fc) })
	if len(changed) == 0 {
		return nil
	}
	g := o.fact(record.ViaOutside)
	source, from := c.source(o, st, oldObj, rec)
	g.DeclaredFrom = from
	wasOpen := st != nil && st.open != nil
	merges := fluxMerges(o, newObj)
	for _, fc := range changed {
		declared := valueOf(st, source, fc.Path)
		if merges && source != nil && declared == absent {
			continue // a field Flux keeps beside its own
		}
		if source != nil && equal(valueAt(newObj.Object, fc.Path), declared) {
			if wasOpen {
				delete(st.open.fields, fc.Path) // put back by hand
			}
			continue
		}
		g.Drift = append(g.Drift, driftedField(fc, declared, source != nil))
		if source != nil {
			st = c.open(st, rec, fc.Path, declared)
		}
	}
	if merges && len(g.Drift) == 0 && !wasOpen {
		return nil // only fields Flux keeps changed
	}
	if wasOpen && len(st.open.fields) == 0 {
		g.Reverts, g.DriftSeconds = st.open.id, seconds(time.Time(rec.Time).Sub(st.open.since))
		c.ended(st.open)
		st.open = nil
	}
	if !wasOpen && st != nil && st.open != nil {
		st.open.namespace, st.open.owner = rec.Namespace, OwnerLabel(*g)
		c.opened(st.open)
	}
	return g
}

// source is the declared state an outside change is compared with, and
// its name: the object right after its owner's last write, else its Helm
// release's manifest, else its last-applied-configuration before the
// change, else none (unknown).
func (c *Classifier) source(o owner, st *objectState, oldObj *unstructured.Unstructured, rec *record.Change) (map[string]any, string) {
	if st != nil && st.declared != nil {
		return st.declared, record.DeclaredFromSync
	}
	if o.tool == record.ToolHelm && c.manifests != nil {
		if declared := c.manifests.Declared(o.namespace, o.name, rec); declared != nil {
			return declared, record.DeclaredFromManifest
		}
	}
	if c.lastApplied != nil {
		if applied := c.lastApplied.At(rec.UID, oldObj.GetResourceVersion()); applied != nil {
			return applied, record.DeclaredFromLastApplied
		}
	}
	return nil, record.DeclaredFromUnknown
}

// valueOf is the declared value at p: the one an open drift noted (the
// owner's writes since may have kept the outside value), else source's.
func valueOf(st *objectState, source map[string]any, p string) any {
	if st != nil && st.open != nil {
		if v, ok := st.open.fields[p]; ok {
			return v
		}
	}
	return valueAt(source, p)
}

// open notes p's drift from declared in the object's open drift,
// opening one with rec when none is.
func (c *Classifier) open(st *objectState, rec *record.Change, p string, declared any) *objectState {
	if st == nil {
		st = c.objects.ensure(rec.UID)
	}
	if st.open == nil {
		st.open = &openDrift{id: rec.ID, since: time.Time(rec.Time), fields: map[string]any{}}
	}
	if _, ok := st.open.fields[p]; !ok {
		st.open.fields[p] = declared
	}
	return st
}

// driftedField is fc as drift from declared (known: a source said it).
func driftedField(fc record.FieldChange, declared any, known bool) record.DriftedField {
	f := record.DriftedField{Path: fc.Path, Field: fc.Field, Before: fc.From, Now: fc.To}
	switch {
	case !known:
	case declared == absent:
		f.Undeclared = true
	default:
		f.Declared, f.Truncated = bounded(declared)
	}
	return f
}

// declaredChanges are rec's changes of fields the owner declares: those
// its managedFields entries own (or may own, below the levels kept) in
// the declared state or before the change, those drifted already, and
// fields added under a spec field it owns. Status is never declared;
// nor is the replica count an autoscaler writes through the scale
// subresource.
func declaredChanges(o owner, st *objectState, oldObj *unstructured.Unstructured, rec *record.Change) []record.FieldChange {
	var sets []map[string]any
	if st != nil && st.declared != nil {
		sets = ownerSets(st.declared, o)
	}
	sets = append(sets, ownerSets(oldObj.Object, o)...)
	var out []record.FieldChange
	for _, fc := range rec.Changes {
		if fc.Path == "/status" || strings.HasPrefix(fc.Path, "/status/") || autoscaled(rec.Manager, fc.Path) {
			continue
		}
		if drifted(st, fc.Path) || declares(sets, fc) {
			out = append(out, fc)
		}
	}
	return out
}

func drifted(st *objectState, p string) bool {
	if st == nil || st.open == nil {
		return false
	}
	_, ok := st.open.fields[p]
	return ok
}

// declares says whether one of the owner's field sets declares fc's
// field, or fc adds a field inside a spec field the owner declares
// (`kubectl set env` on a declared container: the drift Argo CD misses).
func declares(sets []map[string]any, fc record.FieldChange) bool {
	parent := fc.Path[:max(strings.LastIndexByte(fc.Path, '/'), 0)]
	for _, set := range sets {
		if managedfields.OwnershipOf(set, fc.Path) >= managedfields.MaybeOwned {
			return true
		}
		if fc.Op == record.OpAdd && strings.HasPrefix(parent, "/spec") && managedfields.OwnershipOf(set, parent) >= managedfields.MaybeOwned {
			return true
		}
	}
	return false
}

// autoscaled says whether a write of p is an autoscaler's: the replica
// count written through the scale subresource by the
// kube-controller-manager, whose HorizontalPodAutoscaler controller is
// the one that scales so (an HPA's scaling is not drift).
func autoscaled(m *record.Manager, p string) bool {
	return p == "/spec/replicas" && m.Subresource == "scale" && m.Name == "kube-controller-manager"
}

// ownerSets are the field sets (fieldsV1) of obj's managedFields entries
// written by o's managers on the main resource.
func ownerSets(obj map[string]any, o owner) []map[string]any {
	var out []map[string]any
	eachEntry(obj, func(name, subresource string, set map[string]any) {
		if subresource == "" && o.manages(name) && set != nil {
			out = append(out, set)
		}
	})
	return out
}

// hasEntry says whether obj has a managedFields entry of o's managers.
func hasEntry(obj *unstructured.Unstructured, o owner) bool {
	found := false
	eachEntry(obj.Object, func(name, _ string, _ map[string]any) { found = found || o.manages(name) })
	return found
}

func eachEntry(obj map[string]any, f func(name, subresource string, set map[string]any)) {
	meta, _ := obj["metadata"].(map[string]any)
	entries, _ := meta["managedFields"].([]any)
	for _, e := range entries {
		entry, _ := e.(map[string]any)
		name, _ := entry["manager"].(string)
		subresource, _ := entry["subresource"].(string)
		set, _ := entry[managedfields.FieldsKey].(map[string]any)
		f(name, subresource, set)
	}
}

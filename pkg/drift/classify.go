// Package drift says of each change whether the object's GitOps owner
// (an Argo CD Application, a Flux Kustomization or HelmRelease, a Helm
// release) made it or someone else changed what the owner declares, and
// what drifted from the declared state, and which write put it back
// (record.GitOps; docs/drift.md).
//
// It runs on the record path for every update, so it makes no API call
// and reads only the objects the watch delivered: an object without a
// GitOps mark costs a few map reads. What it knows of the declared state
// it learned by watching the owner write (kept in memory, bounded), or
// reads from the object itself (last-applied-configuration).
package drift

import (
	"log/slog"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubediff/kubediff/pkg/record"
)

// Classifier attaches the GitOps fact to records. It is safe for
// concurrent use: every reflector's goroutine passes records through it;
// one object's records come in order.
type Classifier struct {
	log *slog.Logger

	mu      sync.Mutex
	objects *memory
	// logged are the objects whose marks were said to be unusable, so
	// that each gets one log line (bounded: beyond maxLogged, no more).
	logged map[string]bool
	// lastApplied reads the declared state a client-side apply left in
	// the object (nil: not read).
	lastApplied LastApplied
	// ignores are Argo CD Applications' ignoreDifferences (nil: none).
	ignores *Ignores
	// manifests give a Helm release's objects as its manifest declares
	// them (nil: not read).
	manifests Manifests
	// transitions is told when an object's drift opens or ends (nil:
	// no one), under mu.
	transitions func(Transition)
}

// Transition says that an object's drift opened (Open) or ended: put
// back, its object deleted, or forgotten when the memory's bound let
// the object go. Namespace is the object's; Owner its owner as
// OwnerLabel names it.
type Transition struct {
	Namespace, Owner string
	Open             bool
}

// OnTransition has f told of every Transition, in order, while the
// Classifier's lock is held: f must be quick and must not call the
// Classifier. Call it before the first Classify.
func (c *Classifier) OnTransition(f func(Transition)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.transitions = f
	c.objects.evicted = func(st *objectState) { c.ended(st.open) }
}

// opened and ended tell of an open drift's start and end.
func (c *Classifier) opened(d *openDrift) {
	if c.transitions != nil && d != nil {
		c.transitions(Transition{Namespace: d.namespace, Owner: d.owner, Open: true})
	}
}

func (c *Classifier) ended(d *openDrift) {
	if c.transitions != nil && d != nil {
		c.transitions(Transition{Namespace: d.namespace, Owner: d.owner})
	}
}

// LastApplied is the declared state an object's
// kubectl.kubernetes.io/last-applied-configuration held at a
// resourceVersion (nil: none known), as its redacting reader kept it.
type LastApplied interface {
	At(uid, resourceVersion string) map[string]any
	// Forget drops what is kept of an object that is gone.
	Forget(uid string)
}

// Manifests is the declared state of an object of a Helm release, as
// its newest revision's manifest has it, redacted as the object is (nil:
// none known). The map is shared: read it, never change it.
type Manifests interface {
	Declared(releaseNamespace, release string, rec *record.Change) map[string]any
}

// SetManifests makes outside changes to a Helm release's objects compare
// with its manifest when kubediff has not seen Helm write the object.
func (c *Classifier) SetManifests(m Manifests) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.manifests = m
}

const maxLogged = 1000

// New returns a Classifier logging unusable marks to log (nil: none),
// reading declared states from lastApplied and Argo CD's exceptions from
// ignores when they are not nil.
func New(log *slog.Logger, lastApplied LastApplied, ignores *Ignores) *Classifier {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Classifier{log: log, objects: newMemory(maxObjects), logged: map[string]bool{}, lastApplied: lastApplied, ignores: ignores}
}

// Classify sets rec.GitOps for the write from oldObj to newObj that rec
// describes: via sync when its manager is the object's GitOps owner, via
// outside when another manager changed a field the owner declares,
// nothing otherwise (no owner, a write that declared nothing, a writer
// no managedFields entry names: never a guess).
func (c *Classifier) Classify(oldObj, newObj *unstructured.Unstructured, rec *record.Change) {
	if rec.UID == "" {
		return
	}
	if rec.Type == record.Deleted {
		c.mu.Lock()
		if st := c.objects.get(rec.UID); st != nil {
			c.ended(st.open)
		}
		c.objects.forget(rec.UID)
		c.mu.Unlock()
		if c.lastApplied != nil {
			c.lastApplied.Forget(rec.UID)
		}
		return
	}
	if newObj == nil {
		return
	}
	o, ok := c.ownerOf(newObj, oldObj, rec)
	if !ok || rec.Manager == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if o.wrote(rec.Manager) {
		rec.GitOps = c.sync(o, newObj, rec)
		return
	}
	if rec.Type == record.Updated && oldObj != nil && !fluxLeavesIt(o, newObj) {
		rec.GitOps = c.outside(o, oldObj, newObj, rec)
	}
}

// fluxSSAAnnotation tells kustomize-controller how to apply an object:
// Ignore (never), IfNotPresent (create it, never update it), Merge
// (apply its fields, keep those others added).
const fluxSSAAnnotation = "kustomize.toolkit.fluxcd.io/ssa"

// fluxLeavesIt says whether the object's Kustomization never puts back
// what others change (ssa: Ignore or IfNotPresent): then no change of it
// is drift, as Flux itself sees none.
func fluxLeavesIt(o owner, obj *unstructured.Unstructured) bool {
	if o.tool != record.ToolFlux || o.kind != "Kustomization" {
		return false
	}
	mode := stringsAt(obj, "annotations").get(fluxSSAAnnotation)
	return strings.EqualFold(mode, "Ignore") || strings.EqualFold(mode, "IfNotPresent")
}

// fluxMerges says whether the object's Kustomization keeps the fields
// others add (ssa: Merge): those are then no drift.
func fluxMerges(o owner, obj *unstructured.Unstructured) bool {
	return o.tool == record.ToolFlux && o.kind == "Kustomization" && strings.EqualFold(stringsAt(obj, "annotations").get(fluxSSAAnnotation), "Merge")
}

// ownerOf is the object's GitOps owner, when its marks name one and the
// owner has written it (a managedFields entry of its manager): marks
// alone are copied by tools that are no owner (`helm template | kubectl
// apply`).
func (c *Classifier) ownerOf(newObj, oldObj *unstructured.Unstructured, rec *record.Change) (owner, bool) {
	o, ok, problem := ownerOf(newObj)
	if problem != "" {
		c.logOnce(rec, problem)
	}
	if !ok {
		return owner{}, false
	}
	if hasEntry(newObj, o) || oldObj != nil && hasEntry(oldObj, o) {
		return o, true
	}
	return owner{}, false
}

// logOnce logs problem about rec's object, once per object.
func (c *Classifier) logOnce(rec *record.Change, problem string) {
	c.mu.Lock()
	first := !c.logged[rec.UID] && len(c.logged) < maxLogged
	if first {
		c.logged[rec.UID] = true
	}
	c.mu.Unlock()
	if first {
		c.log.Warn(problem, "kind", rec.Kind, "namespace", rec.Namespace, "name", rec.Name)
	}
}

// sync is the fact of the owner's write: it ends the object's open
// drift when it puts back (or declares anew) every drifted field, and
// its result is the declared state from now on.
func (c *Classifier) sync(o owner, newObj *unstructured.Unstructured, rec *record.Change) *record.GitOps {
	g := o.fact(record.ViaSync)
	st := c.objects.ensure(rec.UID)
	if open := st.open; open != nil {
		for p, declared := range open.fields {
			if written(rec.Changes, p) || equal(valueAt(newObj.Object, p), declared) {
				delete(open.fields, p)
			}
		}
		if len(open.fields) == 0 {
			g.Reverts, g.DriftSeconds = open.id, seconds(time.Time(rec.Time).Sub(open.since))
			st.open = nil
			c.ended(open)
		}
	}
	st.declared = withoutStatus(newObj.Object)
	return g
}

// seconds is d in seconds, to the millisecond.
func seconds(d time.Duration) float64 {
	return float64(d.Milliseconds()) / 1000
}

// written says whether changes set the field at p or a field above it:
// the owner wrote it, so its value is declared anew.
func written(changes []record.FieldChange, p string) bool {
	for _, fc := range changes {
		if fc.Op != record.OpRemove && (fc.Path == p || isBelow(p, fc.Path)) {
			return true
		}
	}
	return false
}

// isBelow says whether pointer p is below ancestor.
func isBelow(p, ancestor string) bool {
	return len(p) > len(ancestor) && p[len(ancestor)] == '/' && p[:len(ancestor)] == ancestor
}

// withoutStatus is a shallow view of obj without its status: the
// declared state, which a GitOps tool never applies status into.
func withoutStatus(obj map[string]any) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		if k != "status" {
			out[k] = v
		}
	}
	return out
}

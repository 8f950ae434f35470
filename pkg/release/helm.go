package release

import (
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubediff/kubediff/pkg/record"
)

// maxRevisions bounds the revisions kept per release: Helm keeps 10 by
// default (--history-max).
const maxRevisions = 16

// helmRelease is what the book knows of one Helm release: its revisions,
// from the labels of the Secrets (or ConfigMaps) Helm keeps them in.
type helmRelease struct {
	revisions map[int]*helmRevision
	// source is where Helm keeps this release's records: secrets, or
	// configmaps with HELM_DRIVER=configmap.
	source string
}

// helmRevision is one revision of a release, as its records claim it:
// by the type holding each record, one unless Helm's records are
// believed from both Secrets and ConfigMaps and both hold one (the
// object's name is Helm's for the revision, so each type holds one).
type helmRevision struct {
	claims map[string]*helmClaim
}

// helmClaim is what one record says of its revision.
type helmClaim struct {
	// created is the resourceVersion the record was first seen at:
	// Helm writes it (pending-install, pending-upgrade) before applying
	// the release's objects, so their writes come after it.
	created  uint64
	statuses []versioned[string] // the revision's status as it moved
	chart    record.Release      // Chart and AppVersion only
	read     bool                // the chart's metadata was looked for
	// objects are the newest revision's manifest's, each as JSON by
	// manifestKey (Secrets left out), and declared those of them decoded
	// (Declared); older revisions keep neither.
	objects  map[string][]byte
	declared map[string]map[string]any
}

// versioned is a value as of a resourceVersion.
type versioned[T any] struct {
	rv    uint64
	value T
}

// helmRecordType is the type Helm's secrets driver gives its Secrets.
// Only Helm (or whoever may create Secrets, and so could run Helm
// itself) writes one; a ConfigMap's labels anyone who may create
// ConfigMaps can write.
const helmRecordType = "helm.sh/release.v1"

// helmRecord is the release and revision obj, a Secret or ConfigMap,
// is a record of, when it is one that may be believed: of a type
// holding the records (Book's HelmStorage), a Secret of Helm's type,
// labelled as Helm labels them (owner=helm, name, version, status) and
// named as Helm names them (sh.helm.release.v1.NAME.vVERSION).
func (b *Book) helmRecord(source string, obj *unstructured.Unstructured) (name string, revision int, ok bool) {
	if !b.helmSources[source] {
		return "", 0, false
	}
	if typ, _ := obj.Object["type"].(string); source == sourceSecrets && typ != helmRecordType {
		return "", 0, false
	}
	labels := metadataStrings(obj, "labels")
	name = labels.of("name")
	revision, err := strconv.Atoi(labels.of("version"))
	if labels.of("owner") != "helm" || name == "" || err != nil || revision <= 0 ||
		obj.GetName() != "sh.helm.release.v1."+name+".v"+strconv.Itoa(revision) {
		return "", 0, false
	}
	return name, revision, true
}

// observeHelm notes a revision's record: its labels, and once its
// chart's metadata. The caller holds mu.
func (b *Book) observeHelm(source string, obj *unstructured.Unstructured, rv uint64) {
	name, revision, ok := b.helmRecord(source, obj)
	if !ok {
		return
	}
	key := obj.GetNamespace() + "/" + name
	rel := b.helm[key]
	if rel == nil {
		rel = &helmRelease{revisions: map[int]*helmRevision{}}
		b.helm[key] = rel
	}
	rel.source = source
	rev := rel.revisions[revision]
	if rev == nil {
		rev = &helmRevision{claims: map[string]*helmClaim{}}
		rel.revisions[revision] = rev
		trimRevisions(rel)
	}
	claim := rev.claims[source]
	if claim == nil {
		claim = &helmClaim{created: rv}
		rev.claims[source] = claim
	}
	status := metadataStrings(obj, "labels").of("status")
	if n := len(claim.statuses); n == 0 || claim.statuses[n-1].value != status {
		claim.statuses = append(claim.statuses, versioned[string]{rv, status})
	}
	if !claim.read {
		claim.read = true
		b.readChart(claim, source, obj)
		b.readManifest(rel, revision, claim, source, obj)
	}
}

// readManifest reads the manifest of a release's revision when it is
// the newest known and not superseded (so a first list of ten revisions
// reads one), and drops the older revisions'. The caller holds mu.
func (b *Book) readManifest(rel *helmRelease, revision int, claim *helmClaim, source string, obj *unstructured.Unstructured) {
	for n := range rel.revisions {
		if n > revision {
			return
		}
	}
	if metadataStrings(obj, "labels").of("status") == "superseded" {
		return
	}
	objects, err := manifestOf(obj, source == sourceSecrets)
	if err != nil && !b.warnedManifest {
		b.warnedManifest = true
		b.log.Warn("a Helm release's manifest is too large to keep: changes to its objects by others are compared with what kubediff saw Helm write, or with nothing (this is said once)",
			"namespace", obj.GetNamespace(), "name", obj.GetName(), "err", err)
	}
	claim.objects, claim.declared = objects, map[string]map[string]any{}
	for n, rev := range rel.revisions {
		if n < revision {
			for _, c := range rev.claims {
				c.objects, c.declared = nil, nil
			}
		}
	}
}

// Declared is the object kind namespace/name as the newest revision of
// Helm release releaseNamespace/name declares it in its manifest (nil:
// not known, or a Secret). The map is shared: read it, never change it.
func (b *Book) Declared(releaseNamespace, release, kind, namespace, name string) map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	rel := b.helm[releaseNamespace+"/"+release]
	if rel == nil {
		return nil
	}
	newest := 0
	for n := range rel.revisions {
		newest = max(newest, n)
	}
	claim, ok := rel.revisions[newest].believed()
	if !ok {
		return nil
	}
	key := manifestKey(kind, namespace, name)
	if _, ok := claim.objects[key]; !ok && (namespace == releaseNamespace || namespace == "") {
		key = manifestKey(kind, "", name) // the chart named no namespace
	}
	return claim.decoded(key)
}

// decoded is the manifest's object at key, decoded once (nil: none).
// The caller holds mu.
func (c *helmClaim) decoded(key string) map[string]any {
	if obj, ok := c.declared[key]; ok {
		return obj
	}
	raw, ok := c.objects[key]
	if !ok {
		return nil
	}
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(raw); err != nil { // integers as int64, as the API server's
		return nil
	}
	c.declared[key] = u.Object
	return u.Object
}

// readChart reads a record's chart metadata into claim. The caller
// holds mu.
func (b *Book) readChart(claim *helmClaim, source string, obj *unstructured.Unstructured) {
	var err error
	claim.chart, err = chartOf(obj, source == sourceSecrets)
	if err != nil && !b.warnedLarge {
		// One line, not one per record: whoever wrote one such record
		// can write many.
		b.warnedLarge = true
		b.log.Warn("a Helm release record's chart metadata is not within the first 16 MiB it decompresses to; it is read no further and names no chart (this is said once)",
			"namespace", obj.GetNamespace(), "name", obj.GetName())
	}
}

// created is the resourceVersion the revision's first record was seen at.
func (r *helmRevision) created() uint64 {
	var first uint64
	for _, c := range r.claims {
		if first == 0 || c.created < first {
			first = c.created
		}
	}
	return first
}

// believed is the revision's record, false when two records claim it
// and disagree on what a record would name (the chart, the status now):
// one of them is not Helm's, and which is not known.
func (r *helmRevision) believed() (*helmClaim, bool) {
	var one *helmClaim
	for _, c := range r.claims {
		switch {
		case one == nil:
			one = c
		case c.chart != one.chart || c.statuses[len(c.statuses)-1].value != one.statuses[len(one.statuses)-1].value:
			return nil, false
		case c.created < one.created:
			one = c
		}
	}
	return one, one != nil
}

// trimRevisions drops the oldest revisions beyond maxRevisions.
func trimRevisions(rel *helmRelease) {
	for len(rel.revisions) > maxRevisions {
		oldest := 0
		for n := range rel.revisions {
			if oldest == 0 || n < oldest {
				oldest = n
			}
		}
		delete(rel.revisions, oldest)
	}
}

// forgetHelm drops a deleted revision's record. The caller holds mu.
func (b *Book) forgetHelm(source string, obj *unstructured.Unstructured) {
	name, revision, ok := b.helmRecord(source, obj)
	if !ok {
		return
	}
	key := obj.GetNamespace() + "/" + name
	rel := b.helm[key]
	if rel == nil || rel.revisions[revision] == nil {
		return
	}
	delete(rel.revisions[revision].claims, source)
	if len(rel.revisions[revision].claims) == 0 {
		delete(rel.revisions, revision)
	}
	if len(rel.revisions) == 0 {
		delete(b.helm, key)
	}
}

// helmAt is release m as it stood at resourceVersion rv (0: now): the
// newest revision whose record Helm wrote before rv, with its status
// then. The caller holds mu.
func (b *Book) helmAt(m mark, rv uint64) *record.Release {
	r := &record.Release{Tool: record.ToolHelm, Namespace: m.namespace, Name: m.name}
	rel := b.helm[m.namespace+"/"+m.name]
	if rel == nil {
		return r
	}
	best := 0
	for n, rev := range rel.revisions {
		if n > best && (rv == 0 || rev.created() < rv) {
			best = n
		}
	}
	if best == 0 {
		return r
	}
	rev, ok := rel.revisions[best].believed()
	if !ok {
		return r // never a guess between two records
	}
	r.Revision, r.Chart, r.AppVersion = best, rev.chart.Chart, rev.chart.AppVersion
	for _, s := range rev.statuses {
		if rv == 0 || s.rv < rv {
			r.Status = s.value
		}
	}
	return r
}

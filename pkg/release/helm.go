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

type helmRevision struct {
	// created is the resourceVersion the revision's record was first
	// seen at: Helm writes it (pending-install, pending-upgrade) before
	// applying the release's objects, so their writes come after it.
	created  uint64
	statuses []versioned[string] // the revision's status as it moved
	chart    record.Release      // Chart and AppVersion only
	read     bool                // the chart's metadata was looked for
}

// versioned is a value as of a resourceVersion.
type versioned[T any] struct {
	rv    uint64
	value T
}

// isHelmRecord says whether obj (a Secret or ConfigMap) is a revision of
// a Helm release: Helm labels them owner=helm, name, version, status.
func isHelmRecord(obj *unstructured.Unstructured) bool {
	labels := metadataStrings(obj, "labels")
	return labels.of("owner") == "helm" && labels.of("name") != "" && labels.of("version") != ""
}

// observeHelm notes a revision's record: its labels, and once its
// chart's metadata. The caller holds mu.
func (b *Book) observeHelm(source string, obj *unstructured.Unstructured, rv uint64) {
	labels := metadataStrings(obj, "labels")
	revision, err := strconv.Atoi(labels.of("version"))
	if err != nil || revision <= 0 {
		return
	}
	key := obj.GetNamespace() + "/" + labels.of("name")
	rel := b.helm[key]
	if rel == nil {
		rel = &helmRelease{revisions: map[int]*helmRevision{}}
		b.helm[key] = rel
	}
	rel.source = source
	rev := rel.revisions[revision]
	if rev == nil {
		rev = &helmRevision{created: rv}
		rel.revisions[revision] = rev
		trimRevisions(rel)
	}
	if n := len(rev.statuses); n == 0 || rev.statuses[n-1].value != labels.of("status") {
		rev.statuses = append(rev.statuses, versioned[string]{rv, labels.of("status")})
	}
	if !rev.read {
		rev.read = true
		var err error
		rev.chart, err = chartOf(obj, source == sourceSecrets)
		if err != nil && !b.warnedLarge {
			// One line, not one per record: whoever wrote one such record
			// can write many.
			b.warnedLarge = true
			b.log.Warn("a Helm release record's chart metadata is not within the first 16 MiB it decompresses to; it is read no further and names no chart (this is said once)",
				"namespace", obj.GetNamespace(), "name", obj.GetName())
		}
	}
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
func (b *Book) forgetHelm(obj *unstructured.Unstructured) {
	labels := metadataStrings(obj, "labels")
	key := obj.GetNamespace() + "/" + labels.of("name")
	rel := b.helm[key]
	if rel == nil {
		return
	}
	revision, _ := strconv.Atoi(labels.of("version"))
	delete(rel.revisions, revision)
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
		if n > best && (rv == 0 || rev.created < rv) {
			best = n
		}
	}
	if best == 0 {
		return r
	}
	rev := rel.revisions[best]
	r.Revision, r.Chart, r.AppVersion = best, rev.chart.Chart, rev.chart.AppVersion
	for _, s := range rev.statuses {
		if rv == 0 || s.rv < rv {
			r.Status = s.value
		}
	}
	return r
}

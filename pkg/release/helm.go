package release

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"io"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubediff/kubediff/pkg/record"
)

const (
	// maxRevisions bounds the revisions kept per release: Helm keeps 10
	// by default (--history-max).
	maxRevisions = 16
	// maxReleaseBytes bounds how much of a release's gzipped JSON is read
	// to find its chart's metadata, against a compression bomb.
	maxReleaseBytes = 64 << 20
)

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
		rev.chart = chartOf(obj, source == sourceSecrets)
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

// chartOf reads the chart's name, version and appVersion from a
// release's record, and nothing else: the release JSON also holds the
// values (passwords among them) and the manifest, which are skipped
// while decoding and never kept. A Secret's data is base64 once more
// than a ConfigMap's.
func chartOf(obj *unstructured.Unstructured, inSecret bool) record.Release {
	encoded, _, _ := unstructured.NestedString(obj.Object, "data", "release")
	if inSecret {
		raw, err := base64.StdEncoding.DecodeString(encoded)
		if err != nil {
			return record.Release{}
		}
		encoded = string(raw)
	}
	raw, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return record.Release{}
	}
	var in io.Reader = bytes.NewReader(raw)
	if bytes.HasPrefix(raw, []byte{0x1f, 0x8b, 0x08}) { // gzip, as Helm writes it
		z, err := gzip.NewReader(in)
		if err != nil {
			return record.Release{}
		}
		defer z.Close()
		in = z
	}
	var release struct {
		Chart struct {
			Metadata struct {
				Name       string `json:"name"`
				Version    string `json:"version"`
				AppVersion string `json:"appVersion"`
			} `json:"metadata"`
		} `json:"chart"`
	}
	if json.NewDecoder(io.LimitReader(in, maxReleaseBytes)).Decode(&release) != nil || release.Chart.Metadata.Name == "" {
		return record.Release{}
	}
	meta := release.Chart.Metadata
	return record.Release{Chart: meta.Name + "-" + meta.Version, AppVersion: meta.AppVersion}
}

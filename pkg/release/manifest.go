package release

import (
	"bytes"
	"errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// A Helm release's manifest is the declared state of the objects it
// installed (pkg/drift): what a change by anyone but Helm is compared
// with when kubediff did not see Helm write the object. Helm keeps it in
// the release record, after the chart and the values; the values are
// read past, never kept, and so is every Secret of the manifest.

const (
	// maxManifest bounds the manifest kept of one release, in bytes of
	// its YAML: a chart's objects, a few hundred KiB in real charts.
	maxManifest = 8 << 20
	// maxManifestObjects bounds the objects kept of one release.
	maxManifestObjects = 5000
)

// errManifestTooLarge is a manifest over maxManifest or
// maxManifestObjects, or not within maxDecompressed of the record.
var errManifestTooLarge = errors.New("the release's manifest is over 8 MiB or 5,000 objects, or past the first 16 MiB its record decompresses to")

// manifestOf reads the objects of a release record's manifest, each as
// JSON by manifestKey, Secrets left out; nil when the record has none.
// The manifest is read a document at a time, out of the JSON string that
// holds it: what is held is one document, never the manifest.
func manifestOf(obj *unstructured.Unstructured, inSecret bool) (map[string][]byte, error) {
	s, done, ok := releaseJSON(obj, inSecret, 0)
	if !ok {
		return nil, nil
	}
	defer done()
	if c, err := s.token(); err != nil || c != '{' {
		return nil, nil
	}
	found, err := s.field("manifest")
	if !found || err != nil {
		return nil, tooLarge(err)
	}
	if c, err := s.token(); err != nil || c != '"' {
		return nil, tooLarge(err)
	}
	m := manifestReader{objects: map[string][]byte{}}
	if err := s.eachLine(m.line); err != nil {
		return nil, tooLarge(err)
	}
	if err := m.end(); err != nil {
		return nil, err
	}
	return m.objects, nil
}

// manifestReader gathers a manifest's documents line by line.
type manifestReader struct {
	objects map[string][]byte
	doc     []byte
	read    int  // bytes of the manifest so far
	skip    bool // the document is over maxDocument: passed over
}

// maxDocument bounds one document of a manifest: an object the API
// server takes is at most 1.5 MiB.
const maxDocument = 2 << 20

// line takes the manifest's next line.
func (m *manifestReader) line(l []byte) error {
	if m.read += len(l) + 1; m.read > maxManifest {
		return errManifestTooLarge
	}
	if string(bytes.TrimRight(l, " \t\r")) == "---" {
		return m.end()
	}
	if m.skip || len(m.doc)+len(l) > maxDocument {
		m.skip, m.doc = true, m.doc[:0]
		return nil
	}
	m.doc = append(append(m.doc, l...), '\n')
	return nil
}

// end takes the document gathered, if it is an object with a kind and a
// name and no Secret.
func (m *manifestReader) end() error {
	doc, skipped := m.doc, m.skip
	m.doc, m.skip = m.doc[:0], false
	if skipped {
		return nil
	}
	var u unstructured.Unstructured
	raw, err := yaml.YAMLToJSON(doc)
	if err != nil || len(raw) < 2 || raw[0] != '{' || u.UnmarshalJSON(raw) != nil {
		return nil // not an object (a comment, an empty document)
	}
	if u.GetKind() == "" || u.GetName() == "" || u.GetKind() == "Secret" {
		return nil
	}
	if len(m.objects) == maxManifestObjects {
		return errManifestTooLarge
	}
	m.objects[manifestKey(u.GetKind(), u.GetNamespace(), u.GetName())] = raw // JSON: a fraction of its maps' size
	return nil
}

// tooLarge is errManifestTooLarge when err says the manifest was cut,
// nil for any other reason a record does not read (it has no manifest
// to give).
func tooLarge(err error) error {
	if errors.Is(err, errTooLarge) || errors.Is(err, errCaptureTooLarge) {
		return errManifestTooLarge
	}
	return nil
}

// manifestKey is where a manifest keeps an object: its namespace as the
// chart wrote it, "" when it wrote none (the release's, or a
// cluster-scoped object).
func manifestKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

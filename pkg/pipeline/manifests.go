package pipeline

import (
	"github.com/kubediff/kubediff/pkg/diff"
	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/release"
)

// helmManifests gives the drift stage a Helm release's objects as its
// manifest declares them (drift.Manifests), redacted by the rules that
// redact the object's type: what is declared reaches records as the
// object's own values do, and no further.
type helmManifests struct {
	releases *release.Book
	types    ObjectLookup
	differ   *diff.Differ
}

// Declared implements drift.Manifests.
func (m helmManifests) Declared(releaseNamespace, name string, rec *record.Change) map[string]any {
	r, ok := m.types.Resource(rec.APIVersion, rec.Kind)
	if !ok {
		return nil // its redaction rules are not known: not used
	}
	obj := m.releases.Declared(releaseNamespace, name, rec.Kind, rec.Namespace, rec.Name)
	if obj == nil {
		return nil
	}
	return m.differ.Redact(obj, r)
}

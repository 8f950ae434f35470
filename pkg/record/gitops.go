package record

import (
	"strconv"
	"strings"
)

// How a change was made, as GitOps.Via says.
const (
	// ViaSync is a write by the object's GitOps owner: Argo CD, Flux or Helm.
	ViaSync = "sync"
	// ViaOutside is a write by anyone else that changed a field the
	// owner declares.
	ViaOutside = "outside"
)

// Where the declared values of an outside change come from, as
// GitOps.DeclaredFrom says.
const (
	// DeclaredFromSync is the object's state right after its owner's
	// last write that kubediff saw.
	DeclaredFromSync = "sync"
	// DeclaredFromLastApplied is the object's
	// kubectl.kubernetes.io/last-applied-configuration annotation,
	// which client-side apply (Argo CD's default) writes.
	DeclaredFromLastApplied = "last-applied"
	// DeclaredFromManifest is the object as its Helm release's newest
	// revision's manifest declares it (the release Secret, read as it is
	// decoded: nothing of a Secret or of the values is kept).
	DeclaredFromManifest = "manifest"
	// DeclaredFromUnknown says kubediff knows no declared state: it
	// never saw the owner write the object since it started, and the
	// object carries no last-applied-configuration.
	DeclaredFromUnknown = "unknown"
)

// GitOps says how a change stands to the object's GitOps owner (an Argo
// CD Application, a Flux Kustomization or HelmRelease, a Helm release):
// made by the owner (a sync) or outside it, and for an outside change
// what it moved away from the declared state; for a sync, the outside
// change it put back (see docs/drift.md). Absent when the object has no
// GitOps owner, or when the write touched nothing the owner declares.
type GitOps struct {
	// Via is sync or outside.
	Via string `json:"via"`
	// Tool is argocd, flux or helm; Kind the object that names the
	// owner (Application, Kustomization, HelmRelease; empty for a Helm
	// release), Namespace and Name its name.
	Tool      string `json:"tool"`
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// DeclaredFrom says where the declared values in Drift come from
	// (sync, last-applied or unknown); set on an outside change.
	DeclaredFrom string `json:"declaredFrom,omitempty"`
	// Drift lists the fields an outside change left different from the
	// declared state.
	Drift []DriftedField `json:"drift,omitempty"`
	// Reverts is the id of the outside record that started the drift
	// this write ended (every drifted field back at its declared value,
	// or declared anew by the owner), and DriftSeconds how long after
	// that record it came.
	Reverts      string  `json:"reverts,omitempty"`
	DriftSeconds float64 `json:"driftSeconds,omitempty"`
}

// DriftedField is one field an outside change left different from the
// declared state: its declared value, its value before the change and
// now. Declared is absent, and Undeclared set, for a field the declared
// state does not have (added outside it); Before is absent for a field
// the change added, Now for one it removed.
type DriftedField struct {
	Path       string `json:"path"`  // RFC 6901 JSON Pointer into the object
	Field      string `json:"field"` // the readable form: spec.replicas
	Declared   any    `json:"declared,omitempty"`
	Undeclared bool   `json:"undeclared,omitempty"`
	Before     any    `json:"before,omitempty"`
	Now        any    `json:"now,omitempty"`
	// Truncated says Declared was too long to carry and is cut (a
	// string, marked "…") or left out (a list or an object).
	Truncated bool `json:"truncated,omitempty"`
}

// Owner names the owner for people: "Argo CD app shop", "Flux
// Kustomization flux-system/apps", "Flux HelmRelease shop/web", "Helm
// release shop/web".
func (g GitOps) Owner() string {
	name := g.Name
	if g.Namespace != "" {
		name = g.Namespace + "/" + g.Name
	}
	switch g.Tool {
	case ToolArgoCD:
		return "Argo CD app " + name
	case ToolFlux:
		return "Flux " + g.Kind + " " + name
	case ToolHelm:
		return "Helm release " + name
	}
	return g.Tool + " " + name
}

// String says it for people: "outside Argo CD app shop", "sync by Argo
// CD app shop", "sync by Argo CD app shop, put back after 4.2s
// (6b64…/207/updated)".
func (g GitOps) String() string {
	if g.Via == ViaOutside {
		return "outside " + g.Owner()
	}
	s := g.Via + " by " + g.Owner()
	if g.Reverts != "" {
		s += ", put back after " + strconv.FormatFloat(g.DriftSeconds, 'f', 1, 64) + "s (" + g.Reverts + ")"
	}
	return s
}

// Text is a drifted field for people: "spec.replicas: declared 2, was
// 2, now 5"; "declared none" for a field added outside the declared
// state, "was none" or "now none" for a field added or removed.
func (f DriftedField) Text(value func(any) string) string {
	var b strings.Builder
	b.WriteString(f.Field + ": declared ")
	switch {
	case f.Undeclared:
		b.WriteString("none")
	case f.Declared == nil && !f.Truncated:
		b.WriteString("unknown")
	default:
		b.WriteString(value(f.Declared))
	}
	for _, part := range []struct {
		name string
		v    any
	}{{", was ", f.Before}, {", now ", f.Now}} {
		b.WriteString(part.name)
		if part.v == nil {
			b.WriteString("none")
		} else {
			b.WriteString(value(part.v))
		}
	}
	return b.String()
}

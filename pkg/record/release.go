package record

import (
	"strconv"
	"strings"
)

// Release tools, as Release.Tool names them.
const (
	ToolHelm   = "helm"
	ToolArgoCD = "argocd"
	ToolFlux   = "flux"
)

// Release is the release or sync that an object belongs to, as it stood
// when the record's write was made: a Helm release and the revision Helm
// was applying or had applied, an Argo CD Application and the Git
// revision it synced, or a Flux Kustomization or HelmRelease and the
// revision it applied (see docs/why.md). Values, manifests and a release
// Secret's data are never part of it.
type Release struct {
	// Tool is helm, argocd or flux.
	Tool string `json:"tool"`
	// Kind is the object that names the release: Application,
	// Kustomization or HelmRelease; empty for a Helm release.
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Revision is a Helm release's revision (1, 2, …).
	Revision int `json:"revision,omitempty"`
	// Status is the Helm revision's status (pending-upgrade, deployed,
	// failed, …), the Argo CD operation's phase (Running, Succeeded, …)
	// or a Flux object's (Reconciling, Ready, Failed).
	Status string `json:"status,omitempty"`
	// Chart is the chart as Helm names it, NAME-VERSION (web-1.4.2), and
	// AppVersion its appVersion.
	Chart      string `json:"chart,omitempty"`
	AppVersion string `json:"appVersion,omitempty"`
	// GitRevision is the source revision synced or applied: an Argo CD
	// sync's commit, a Flux Kustomization's main@sha1:… .
	GitRevision string `json:"gitRevision,omitempty"`
	// StartedAt and FinishedAt bound the Argo CD operation (RFC 3339).
	StartedAt  string `json:"startedAt,omitempty"`
	FinishedAt string `json:"finishedAt,omitempty"`
}

// shortSHA is how many hex digits of a commit text shows, as git's
// abbreviations do; JSON carries the whole revision.
const shortSHA = 12

// String names the release for people: "release web rev 7, chart
// web-1.4.2", "Application argocd/shop, revision 4f1c2a9d0e1b (Running)",
// "Kustomization flux-system/apps, revision main@sha1:4f1c2a9d0e1b".
func (r Release) String() string {
	var parts []string
	if r.Kind == "" {
		head := "release " + r.Name
		if r.Revision > 0 {
			head += " rev " + strconv.Itoa(r.Revision)
		}
		parts = append(parts, head)
	} else {
		parts = append(parts, r.Kind+" "+r.qualified())
	}
	if r.Chart != "" {
		parts = append(parts, "chart "+r.Chart)
	}
	if r.GitRevision != "" {
		parts = append(parts, "revision "+shortRevision(r.GitRevision))
	}
	s := strings.Join(parts, ", ")
	if r.Kind != "" && r.Status != "" {
		s += " (" + r.Status + ")"
	}
	return s
}

func (r Release) qualified() string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}

// shortRevision shortens a full commit hash, alone or after "sha1:"
// (Flux's main@sha1:…), to its first 12 digits.
func shortRevision(rev string) string {
	i := strings.LastIndexAny(rev, ":@") + 1
	hash := rev[i:]
	if len(hash) < 40 || strings.Trim(hash, "0123456789abcdef") != "" {
		return rev
	}
	return rev[:i] + hash[:shortSHA]
}

// Named says whether name names the release: its name, or its
// namespace/name. Nil names no release.
func (r *Release) Named(name string) bool {
	return r != nil && name != "" && (r.Name == name || r.qualified() == name)
}

package drift

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubediff/kubediff/pkg/record"
)

// The marks GitOps tools leave on the objects they apply (the same ones
// pkg/release reads to name the release behind a record).
const (
	argoTrackingAnnotation  = "argocd.argoproj.io/tracking-id"
	instanceLabel           = "app.kubernetes.io/instance"
	managedByLabel          = "app.kubernetes.io/managed-by"
	helmNameAnnotation      = "meta.helm.sh/release-name"
	helmNamespaceAnnotation = "meta.helm.sh/release-namespace"
	kustomizeNameLabel      = "kustomize.toolkit.fluxcd.io/name"
	kustomizeNamespaceLabel = "kustomize.toolkit.fluxcd.io/namespace"
	helmReleaseNameLabel    = "helm.toolkit.fluxcd.io/name"
	helmReleaseNamespace    = "helm.toolkit.fluxcd.io/namespace"
)

// The field managers each owner writes as. Argo CD applies server-side
// as argocd-controller and client-side as argocd-application-controller;
// Flux's controllers and the Helm CLI under their own names.
var (
	argoManagers      = []string{"argocd-controller", "argocd-application-controller"}
	kustomizeManagers = []string{"kustomize-controller"}
	helmCtlManagers   = []string{"helm-controller"}
	helmManagers      = []string{"helm"}
)

// ownerManagers are every owner's managers, for OwnerManager.
var ownerManagers = func() map[string]bool {
	m := map[string]bool{}
	for _, list := range [][]string{argoManagers, kustomizeManagers, helmCtlManagers, helmManagers} {
		for _, name := range list {
			m[name] = true
		}
	}
	return m
}()

// OwnerManager says whether name is a field manager a GitOps owner
// writes as (argocd-controller, kustomize-controller, helm-controller,
// helm): the coalescer keeps such a write apart from anyone else's.
func OwnerManager(name string) bool { return ownerManagers[name] }

// owner is an object's GitOps owner: the tool, the object that names it
// and the field managers it writes as.
type owner struct {
	tool, kind, namespace, name string
	managers                    []string
}

// fact is the record's GitOps fact naming o.
func (o owner) fact(via string) *record.GitOps {
	return &record.GitOps{Via: via, Tool: o.tool, Kind: o.kind, Namespace: o.namespace, Name: o.name}
}

// wrote says whether m is one of o's writes: its manager, on the main
// resource (an owner applies objects, not their status).
func (o owner) wrote(m *record.Manager) bool {
	return m.Subresource == "" && o.manages(m.Name)
}

func (o owner) manages(name string) bool {
	for _, m := range o.managers {
		if m == name {
			return true
		}
	}
	return false
}

// ownerOf is the GitOps owner obj's marks name, and a sentence when they
// name two owners (then none is taken: a verdict either way would be a
// guess). Argo CD's instance label alone counts only when nothing else
// names an owner: Helm charts set it to their release's name too.
func ownerOf(obj *unstructured.Unstructured) (owner, bool, string) {
	annotations, labels := stringsAt(obj, "annotations"), stringsAt(obj, "labels")
	var found []owner
	if id := annotations.get(argoTrackingAnnotation); strings.Count(id, ":") >= 2 {
		app, _, _ := strings.Cut(id, ":")
		found = append(found, argoOwner(app))
	}
	if name := labels.get(kustomizeNameLabel); name != "" {
		found = append(found, owner{tool: record.ToolFlux, kind: "Kustomization", namespace: labels.get(kustomizeNamespaceLabel), name: name, managers: kustomizeManagers})
	}
	fluxHelm := labels.get(helmReleaseNameLabel)
	if fluxHelm != "" {
		found = append(found, owner{tool: record.ToolFlux, kind: "HelmRelease", namespace: labels.get(helmReleaseNamespace), name: fluxHelm, managers: helmCtlManagers})
	}
	// A HelmRelease's objects carry Helm's marks too: helm-controller
	// made the release, so it is their owner, not the Helm CLI.
	if name := annotations.get(helmNameAnnotation); name != "" && fluxHelm == "" && strings.EqualFold(labels.get(managedByLabel), "Helm") {
		ns := annotations.get(helmNamespaceAnnotation)
		if ns == "" {
			ns = obj.GetNamespace()
		}
		found = append(found, owner{tool: record.ToolHelm, namespace: ns, name: name, managers: helmManagers})
	}
	if instance := labels.get(instanceLabel); len(found) == 0 && instance != "" {
		found = append(found, argoOwner(instance))
	}
	switch len(found) {
	case 0:
		return owner{}, false, ""
	case 1:
		return found[0], true, ""
	}
	names := make([]string, len(found))
	for i, o := range found {
		names[i] = o.fact("").Owner()
	}
	return owner{}, false, "the object names two GitOps owners (" + strings.Join(names, ", ") + "): its records say neither sync nor outside"
}

// argoOwner is the Application an Argo CD tracking value names: NAME,
// or NAMESPACE_NAME for an Application outside Argo CD's own namespace.
func argoOwner(app string) owner {
	o := owner{tool: record.ToolArgoCD, kind: "Application", name: app, managers: argoManagers}
	if ns, name, ok := strings.Cut(app, "_"); ok {
		o.namespace, o.name = ns, name
	}
	return o
}

// stringsAt reads obj's labels or annotations in place (every record's
// object is asked; GetLabels would copy them). A value that is not a
// string reads as "".
func stringsAt(obj *unstructured.Unstructured, field string) stringMap {
	m, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "metadata", field)
	values, _ := m.(map[string]any)
	return values
}

type stringMap map[string]any

func (s stringMap) get(key string) string {
	v, _ := s[key].(string)
	return v
}

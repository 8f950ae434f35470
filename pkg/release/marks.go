package release

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The marks release tools leave on the objects they apply.
const (
	helmNameAnnotation      = "meta.helm.sh/release-name"
	helmNamespaceAnnotation = "meta.helm.sh/release-namespace"
	managedByLabel          = "app.kubernetes.io/managed-by"
	instanceLabel           = "app.kubernetes.io/instance"
	argoTrackingAnnotation  = "argocd.argoproj.io/tracking-id"
	kustomizeNameLabel      = "kustomize.toolkit.fluxcd.io/name"
	kustomizeNamespaceLabel = "kustomize.toolkit.fluxcd.io/namespace"
	helmReleaseNameLabel    = "helm.toolkit.fluxcd.io/name"
	helmReleaseNamespace    = "helm.toolkit.fluxcd.io/namespace"
)

// mark is the release an object names: the kind of object that holds
// the release's state (a Helm release, an Application, a Kustomization,
// a HelmRelease) and its namespace and name.
type mark struct {
	kind            string // kindHelm, kindApplication, kindKustomization, kindHelmRelease
	namespace, name string
	// byLabel marks an Application named only by the instance label,
	// which Helm charts set to their release's name too: it counts only
	// when such an Application is known.
	byLabel bool
}

const (
	kindHelm          = ""
	kindApplication   = "Application"
	kindKustomization = "Kustomization"
	kindHelmRelease   = "HelmRelease"
)

// markOf is the release obj names, most specific first: Argo CD's
// tracking annotation, Flux's Kustomization labels, Helm's annotations
// (which a Flux HelmRelease's objects carry too: Helm's own record of
// the revision is the more exact one), Flux's HelmRelease labels, then
// the instance label Argo CD's label tracking sets.
func markOf(obj *unstructured.Unstructured) (mark, bool) {
	annotations, labels := obj.GetAnnotations(), obj.GetLabels()
	if id := annotations[argoTrackingAnnotation]; id != "" {
		app, _, _ := strings.Cut(id, ":")
		return applicationMark(app, false), app != ""
	}
	if name := labels[kustomizeNameLabel]; name != "" {
		return mark{kind: kindKustomization, namespace: labels[kustomizeNamespaceLabel], name: name}, true
	}
	if name := annotations[helmNameAnnotation]; name != "" {
		ns := annotations[helmNamespaceAnnotation]
		if ns == "" {
			ns = obj.GetNamespace()
		}
		return mark{kind: kindHelm, namespace: ns, name: name}, true
	}
	if name := labels[helmReleaseNameLabel]; name != "" {
		return mark{kind: kindHelmRelease, namespace: labels[helmReleaseNamespace], name: name}, true
	}
	instance := labels[instanceLabel]
	if instance != "" && strings.EqualFold(labels[managedByLabel], "Helm") {
		return mark{kind: kindHelm, namespace: obj.GetNamespace(), name: instance}, true // Helm before 3.2 set no annotations
	}
	if instance != "" {
		return applicationMark(instance, true), true
	}
	return mark{}, false
}

// applicationMark is the Application an instance value names: NAME, or
// NAMESPACE_NAME for an Application outside Argo CD's own namespace.
func applicationMark(instance string, byLabel bool) mark {
	m := mark{kind: kindApplication, name: instance, byLabel: byLabel}
	if ns, name, ok := strings.Cut(instance, "_"); ok {
		m.namespace, m.name = ns, name
	}
	return m
}

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
	annotations, labels := metadataStrings(obj, "annotations"), metadataStrings(obj, "labels")
	// APP:GROUP/KIND:NAMESPACE/NAME; anything else is not Argo CD's.
	if id := annotations.of(argoTrackingAnnotation); strings.Count(id, ":") >= 2 {
		app, _, _ := strings.Cut(id, ":")
		return applicationMark(app, false), app != ""
	}
	if name := labels.of(kustomizeNameLabel); name != "" {
		return mark{kind: kindKustomization, namespace: labels.of(kustomizeNamespaceLabel), name: name}, true
	}
	if name := annotations.of(helmNameAnnotation); name != "" {
		ns := annotations.of(helmNamespaceAnnotation)
		if ns == "" {
			ns = obj.GetNamespace()
		}
		return mark{kind: kindHelm, namespace: ns, name: name}, true
	}
	if name := labels.of(helmReleaseNameLabel); name != "" {
		return mark{kind: kindHelmRelease, namespace: labels.of(helmReleaseNamespace), name: name}, true
	}
	instance := labels.of(instanceLabel)
	if instance != "" && strings.EqualFold(labels.of(managedByLabel), "Helm") {
		// Helm before 3.2 set no annotations; a chart's Pods carry only
		// the labels of their template.
		return mark{kind: kindHelm, namespace: obj.GetNamespace(), name: instance}, true
	}
	if instance != "" {
		return applicationMark(instance, true), true
	}
	return mark{}, false
}

// metadataStrings reads obj's labels or annotations in place: every
// record's object is asked for its marks, and GetLabels would copy them.
func metadataStrings(obj *unstructured.Unstructured, field string) stringsOf {
	m, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "metadata", field)
	values, _ := m.(map[string]any)
	return values
}

// stringsOf is labels or annotations as an unstructured object holds them.
type stringsOf map[string]any

// of is the value of key, "" when it is absent or not a string.
func (s stringsOf) of(key string) string {
	v, _ := s[key].(string)
	return v
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

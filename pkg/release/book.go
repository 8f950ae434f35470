// Package release names the release or sync behind a change: the Helm
// release, Argo CD Application or Flux Kustomization or HelmRelease an
// object's marks name, as it stood when the record's write was made.
// The Book learns those states from the watch itself (each Helm
// revision's record, each Application's, Kustomization's and
// HelmRelease's status) as the watcher caches them, and answers for a
// record by resourceVersion: the state written before the record's
// write. What it keeps of a Helm release's record is its labels and its
// chart's name, version and appVersion, never its values or manifest.
// A Helm record is believed only from where Helm keeps them (Secrets of
// Helm's type by default, ConfigMaps when told), named and labelled as
// Helm does, and a revision two records disagree on is named by neither.
package release

import (
	"io"
	"log/slog"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubediff/kubediff/pkg/record"
)

// The types whose objects hold releases' states, as group/resource.
const (
	sourceSecrets        = "/secrets"
	sourceConfigMaps     = "/configmaps"
	sourceApplications   = "argoproj.io/applications"
	sourceKustomizations = "kustomize.toolkit.fluxcd.io/kustomizations"
	sourceHelmReleases   = "helm.toolkit.fluxcd.io/helmreleases"
)

// Book keeps the states of releases the watch delivered, to name the
// release behind each record. It is safe for concurrent use.
type Book struct {
	mu      sync.Mutex
	helm    map[string]*helmRelease // by namespace/name
	objects map[string]timeline     // Applications, Kustomizations, HelmReleases by kind/namespace/name
	// progress is, per source type, the highest resourceVersion the
	// watch delivered: a record's write newer than it may belong to a
	// state not delivered yet.
	progress map[string]uint64
	signal   chan struct{}
	log      *slog.Logger
	// helmSources are the types whose Helm release records are believed.
	helmSources map[string]bool
	// warnedLarge is set once a release record too large to read was
	// logged, warnedManifest once a manifest too large to keep was.
	warnedLarge, warnedManifest bool
}

// Options configure a Book.
type Options struct {
	// HelmStorage names where Helm keeps its release records in the
	// cluster, as Helm names its storage drivers: HelmSecrets (Helm's
	// default), HelmConfigMaps (HELM_DRIVER=configmap), or both. Records
	// are believed from these alone. Empty: HelmSecrets.
	HelmStorage []string
	// Log receives the Book's warnings; nil discards them.
	Log *slog.Logger
}

// The storage drivers of Helm's that keep release records in the cluster.
const (
	HelmSecrets    = "secrets"
	HelmConfigMaps = "configmaps"
)

// NewBook returns an empty Book.
func NewBook(o Options) *Book {
	log := o.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	sources := map[string]bool{}
	for _, driver := range o.HelmStorage {
		sources["/"+driver] = true // sourceSecrets, sourceConfigMaps
	}
	if len(sources) == 0 {
		sources[sourceSecrets] = true
	}
	return &Book{helm: map[string]*helmRelease{}, objects: map[string]timeline{}, progress: map[string]uint64{},
		signal: make(chan struct{}, 1), log: log, helmSources: sources}
}

// Source says whether objects of the type group/resource may hold a
// release's state, for the cache transform to show them to the Book.
func Source(group, resource string) bool {
	switch group + "/" + resource {
	case sourceSecrets, sourceConfigMaps, sourceApplications, sourceKustomizations, sourceHelmReleases:
		return true
	}
	return false
}

// Observe notes obj, a state of an object of a Source type as the
// watch delivered it (listed or watched), before redaction: it must see
// a Helm release's record whole once to read its chart's metadata.
func (b *Book) Observe(group, resource string, obj *unstructured.Unstructured) {
	source := group + "/" + resource
	rv := parseVersion(obj.GetResourceVersion())
	b.mu.Lock()
	if rv > b.progress[source] {
		b.progress[source] = rv
	}
	switch source {
	case sourceSecrets, sourceConfigMaps:
		b.observeHelm(source, obj, rv)
	case sourceApplications:
		b.note(kindApplication, obj, rv, applicationState(obj))
	case sourceKustomizations:
		b.note(kindKustomization, obj, rv, kustomizationState(obj))
	case sourceHelmReleases:
		b.note(kindHelmRelease, obj, rv, helmReleaseState(obj))
	}
	b.mu.Unlock()
	select {
	case b.signal <- struct{}{}:
	default:
	}
}

// Forget drops what the Book keeps of a deleted object of a Source type.
func (b *Book) Forget(group, resource string, obj *unstructured.Unstructured) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch source := group + "/" + resource; source {
	case sourceSecrets, sourceConfigMaps:
		b.forgetHelm(source, obj)
	case sourceApplications:
		delete(b.objects, objectKey(kindApplication, obj.GetNamespace(), obj.GetName()))
	case sourceKustomizations:
		delete(b.objects, objectKey(kindKustomization, obj.GetNamespace(), obj.GetName()))
	case sourceHelmReleases:
		delete(b.objects, objectKey(kindHelmRelease, obj.GetNamespace(), obj.GetName()))
	}
}

// Noted is signalled after states are observed, for a stage waiting for
// them; one signal may stand for several.
func (b *Book) Noted() <-chan struct{} { return b.signal }

// note adds an object's state to its timeline. The caller holds mu.
func (b *Book) note(kind string, obj *unstructured.Unstructured, rv uint64, state record.Release) {
	key := objectKey(kind, obj.GetNamespace(), obj.GetName())
	b.objects[key] = b.objects[key].add(rv, state)
}

func objectKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// Release names the release obj belongs to, as it stood when the write
// that made resourceVersion rv was made; nil when obj carries no
// release's marks. Settled is false while a state written before rv may
// not have been delivered yet: the watch of the type that holds it has
// not reached rv. rv that is not a number (an API server other than
// kube-apiserver) is answered with the newest states, settled.
func (b *Book) Release(obj *unstructured.Unstructured, rv string) (r *record.Release, settled bool) {
	m, ok := markOf(obj)
	if !ok {
		return nil, true
	}
	version := parseVersion(rv)
	b.mu.Lock()
	defer b.mu.Unlock()
	progress := b.progress[b.sourceOf(m)]
	settled = version == 0 || progress == 0 || progress >= version
	if m.kind == kindHelm {
		return b.helmAt(m, version), settled
	}
	r = b.objectAt(m, version)
	// An instance label naming no known Application is a Helm chart's
	// (or anyone's) label: nothing is coming.
	return r, settled || r == nil
}

// Applier says whether manager, a field manager, is one release tools
// apply objects as (Helm, Argo CD, Flux): a write made as one is part of
// a release, whose state was written just before it and may still be
// on its way.
func Applier(manager string) bool {
	switch manager {
	case "helm", "argocd-controller", "argocd-application-controller", "kustomize-controller", "helm-controller":
		return true
	}
	return false
}

// sourceOf is the type whose watch delivers m's states. The caller
// holds mu.
func (b *Book) sourceOf(m mark) string {
	switch m.kind {
	case kindApplication:
		return sourceApplications
	case kindKustomization:
		return sourceKustomizations
	case kindHelmRelease:
		return sourceHelmReleases
	}
	if rel := b.helm[m.namespace+"/"+m.name]; rel != nil {
		return rel.source
	}
	return sourceSecrets
}

// objectAt is the Application, Kustomization or HelmRelease m names at
// rv, or its name alone when its states are unknown; nil for an
// instance label naming no known Application. The caller holds mu.
func (b *Book) objectAt(m mark, rv uint64) *record.Release {
	if m.kind == kindApplication && m.namespace == "" {
		m.namespace = b.applicationNamespace(m.name)
	}
	t, known := b.objects[objectKey(m.kind, m.namespace, m.name)]
	if !known && m.byLabel {
		return nil
	}
	if state, ok := t.at(rv); ok {
		return &state
	}
	tool := record.ToolFlux
	if m.kind == kindApplication {
		tool = record.ToolArgoCD
	}
	return &record.Release{Tool: tool, Kind: m.kind, Namespace: m.namespace, Name: m.name}
}

// argoNamespace is where Argo CD keeps Applications unless told
// otherwise; their tracking values name them without a namespace.
const argoNamespace = "argocd"

// applicationNamespace is the namespace of the known Application
// called name: the only one, else the one in argocd. The caller holds mu.
func (b *Book) applicationNamespace(name string) string {
	var found []string
	for _, t := range b.objects {
		if len(t) > 0 && t[0].value.Kind == kindApplication && t[0].value.Name == name {
			found = append(found, t[0].value.Namespace)
		}
	}
	if len(found) == 1 {
		return found[0]
	}
	return argoNamespace
}

// parseVersion is a resourceVersion as a number (kube-apiserver's are
// etcd's revisions), 0 when it is not one.
func parseVersion(rv string) uint64 {
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

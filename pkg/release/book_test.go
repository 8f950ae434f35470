package release

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubediff/kubediff/pkg/record"
)

const canary = "values-canary-password-0451"

// helmSecret is revision rev of release name as Helm's Secret driver
// stores it at resourceVersion rv: labels, and the release's JSON
// gzipped and base64'd (twice: the Secret's data is base64 too), values
// holding a password.
func helmSecret(t *testing.T, name string, rev int, status, chartVersion string, rv int) *unstructured.Unstructured {
	t.Helper()
	return helmSecretWith(t, name, rev, status, chartVersion, rv, "kind: Secret\nmetadata: {name: creds}\nstringData: {password: "+canary+"}")
}

// helmSecretWith is helmSecret with the given manifest.
func helmSecretWith(t *testing.T, name string, rev int, status, chartVersion string, rv int, manifest string) *unstructured.Unstructured {
	t.Helper()
	release := map[string]any{
		"name":     name,
		"chart":    map[string]any{"metadata": map[string]any{"name": name, "version": chartVersion, "appVersion": "2.0"}, "values": map[string]any{"password": canary}},
		"config":   map[string]any{"password": canary},
		"manifest": manifest,
		"version":  rev,
	}
	raw, err := json.Marshal(release)
	if err != nil {
		t.Fatal(err)
	}
	var zipped bytes.Buffer
	z := gzip.NewWriter(&zipped)
	z.Write(raw)
	z.Close()
	helmEncoded := base64.StdEncoding.EncodeToString(zipped.Bytes())
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
		"metadata": map[string]any{"name": fmt.Sprintf("sh.helm.release.v1.%s.v%d", name, rev), "namespace": "shop", "resourceVersion": fmt.Sprint(rv),
			"labels": map[string]any{"owner": "helm", "name": name, "version": fmt.Sprint(rev), "status": status}},
		"data": map[string]any{"release": base64.StdEncoding.EncodeToString([]byte(helmEncoded))},
	}}
}

func object(annotations, labels map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "annotations": annotations, "labels": labels}}}
}

var helmManaged = object(map[string]any{helmNameAnnotation: "web", helmNamespaceAnnotation: "shop"}, map[string]any{managedByLabel: "Helm"})

// An upgrade: Helm writes revision 2 pending-upgrade, applies the
// objects, then marks 2 deployed and 1 superseded. A write after the
// pending record belongs to revision 2; one before it to revision 1;
// the write's record is not settled until the Secrets' watch reached it.
func TestHelmRevisionOfAWrite(t *testing.T) {
	b := NewBook(Options{})
	b.Observe("", "secrets", helmSecret(t, "web", 1, "deployed", "1.0.0", 100))
	if r, settled := b.Release(helmManaged, "105"); !settled && r.Revision != 1 {
		t.Fatalf("before revision 2 was seen: %+v settled=%v, want revision 1, unsettled", r, settled)
	}
	b.Observe("", "secrets", helmSecret(t, "web", 2, "pending-upgrade", "1.4.2", 110))
	r, settled := b.Release(helmManaged, "115")
	if settled {
		t.Error("a write newer than every Secret delivered is settled")
	}
	want := record.Release{Tool: "helm", Namespace: "shop", Name: "web", Revision: 2, Status: "pending-upgrade", Chart: "web-1.4.2", AppVersion: "2.0"}
	if *r != want {
		t.Errorf("at 115: %+v, want %+v", *r, want)
	}
	b.Observe("", "secrets", helmSecret(t, "web", 2, "deployed", "1.4.2", 120))
	b.Observe("", "secrets", helmSecret(t, "web", 1, "superseded", "1.0.0", 121))
	if r, settled = b.Release(helmManaged, "115"); !settled || *r != want {
		t.Errorf("at 115 after the upgrade: %+v settled=%v, want %+v settled", *r, settled, want)
	}
	if r, _ = b.Release(helmManaged, "105"); r.Revision != 1 || r.Status != "deployed" || r.Chart != "web-1.0.0" {
		t.Errorf("at 105: %+v, want revision 1 deployed, chart web-1.0.0", *r)
	}
	if r, _ = b.Release(helmManaged, "130"); r.Revision != 2 || r.Status != "deployed" {
		t.Errorf("at 130: %+v, want revision 2 deployed", *r)
	}
	for key, rel := range b.helm {
		if strings.Contains(fmt.Sprintf("%+v %+v", key, *rel.revisions[2]), canary) {
			t.Error("the book keeps something of the release's values")
		}
	}
	b.Forget("", "secrets", helmSecret(t, "web", 1, "superseded", "1.0.0", 121))
	b.Forget("", "secrets", helmSecret(t, "web", 2, "deployed", "1.4.2", 120))
	if r, _ = b.Release(helmManaged, "140"); *r != (record.Release{Tool: "helm", Namespace: "shop", Name: "web"}) {
		t.Errorf("after uninstall: %+v, want the marks alone", *r)
	}
}

func TestMarks(t *testing.T) {
	b := NewBook(Options{})
	b.Observe("argoproj.io", "applications", &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "shop", "namespace": "argocd", "resourceVersion": "50"},
		"status":   map[string]any{"sync": map[string]any{"revision": "aaa"}, "operationState": map[string]any{"phase": "Succeeded"}}}})
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
		want string // Release.String(), "" for none
	}{
		{"nothing", object(nil, map[string]any{"app": "web"}), ""},
		{"helm", helmManaged, "release web"},
		{"old helm", object(nil, map[string]any{managedByLabel: "Helm", instanceLabel: "web"}), "release web"},
		{"argo annotation", object(map[string]any{argoTrackingAnnotation: "shop:apps/Deployment:shop/web"}, nil), "Application argocd/shop, revision aaa (Succeeded)"},
		{"argo annotation, app elsewhere", object(map[string]any{argoTrackingAnnotation: "team_shop:apps/Deployment:shop/web"}, nil), "Application team/shop"},
		{"argo annotation of another form", object(map[string]any{argoTrackingAnnotation: "*** redacted 01234567 ***"}, nil), ""},
		{"argo label", object(nil, map[string]any{instanceLabel: "shop"}), "Application argocd/shop, revision aaa (Succeeded)"},
		{"instance label, no Application", object(nil, map[string]any{instanceLabel: "web"}), ""},
		{"flux kustomization", object(nil, map[string]any{kustomizeNameLabel: "apps", kustomizeNamespaceLabel: "flux-system"}), "Kustomization flux-system/apps"},
		{"flux helmrelease", object(nil, map[string]any{helmReleaseNameLabel: "web", helmReleaseNamespace: "flux-system"}), "HelmRelease flux-system/web"},
	} {
		r, _ := b.Release(tc.obj, "60")
		got := ""
		if r != nil {
			got = r.String()
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if _, settled := b.Release(object(nil, map[string]any{instanceLabel: "web"}), "60"); !settled {
		t.Error("an instance label naming no known Application waits for one")
	}
	for manager, want := range map[string]bool{"helm": true, "argocd-controller": true, "kustomize-controller": true, "kubectl": false, "": false} {
		if Applier(manager) != want {
			t.Errorf("Applier(%q) = %v", manager, !want)
		}
	}
}

// Argo CD writes the running operation (with the revision to sync)
// before it applies, and the finished one after: a write between them
// names the revision being synced.
func TestApplicationSync(t *testing.T) {
	b := NewBook(Options{})
	app := func(rv int, phase, synced, syncing string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": "shop", "namespace": "argocd", "resourceVersion": fmt.Sprint(rv)},
			"status": map[string]any{"sync": map[string]any{"revision": synced},
				"operationState": map[string]any{"phase": phase, "startedAt": "2026-11-26T10:00:00Z", "operation": map[string]any{"sync": map[string]any{"revision": syncing}}}}}}
	}
	b.Observe("argoproj.io", "applications", app(10, "Succeeded", "old", "old"))
	b.Observe("argoproj.io", "applications", app(20, "Running", "old", "new"))
	b.Observe("argoproj.io", "applications", app(30, "Succeeded", "new", "new"))
	tracked := object(map[string]any{argoTrackingAnnotation: "shop:apps/Deployment:shop/web"}, nil)
	for rv, want := range map[string]string{"15": "old Succeeded", "25": "new Running", "35": "new Succeeded"} {
		r, settled := b.Release(tracked, rv)
		if got := r.GitRevision + " " + r.Status; got != want || settled != (rv != "35") {
			t.Errorf("at %s: %q settled=%v, want %q, settled unless newer than every Application delivered", rv, got, settled, want)
		}
	}
}

// kustomize-controller writes lastAttemptedRevision and Reconciling
// before it applies, lastAppliedRevision after.
func TestKustomizationApply(t *testing.T) {
	b := NewBook(Options{})
	ks := func(rv int, reconciling, attempted, applied string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": "apps", "namespace": "flux-system", "resourceVersion": fmt.Sprint(rv)},
			"status": map[string]any{"lastAttemptedRevision": attempted, "lastAppliedRevision": applied, "conditions": []any{
				map[string]any{"type": "Reconciling", "status": reconciling}, map[string]any{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded"}}}}}
	}
	b.Observe("kustomize.toolkit.fluxcd.io", "kustomizations", ks(10, "False", "main@sha1:old", "main@sha1:old"))
	b.Observe("kustomize.toolkit.fluxcd.io", "kustomizations", ks(20, "True", "main@sha1:new", "main@sha1:old"))
	b.Observe("kustomize.toolkit.fluxcd.io", "kustomizations", ks(30, "False", "main@sha1:new", "main@sha1:new"))
	labelled := object(nil, map[string]any{kustomizeNameLabel: "apps", kustomizeNamespaceLabel: "flux-system"})
	for rv, want := range map[string]string{"15": "main@sha1:old ReconciliationSucceeded", "25": "main@sha1:new Reconciling", "35": "main@sha1:new ReconciliationSucceeded"} {
		if r, _ := b.Release(labelled, rv); r.GitRevision+" "+r.Status != want {
			t.Errorf("at %s: %q, want %q", rv, r.GitRevision+" "+r.Status, want)
		}
	}
}

// helmConfigMap is secret as Helm's ConfigMap driver keeps it: the
// same labels and data, base64'd once.
func helmConfigMap(t *testing.T, secret *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	inSecret, _, _ := unstructured.NestedString(secret.Object, "data", "release")
	once, err := base64.StdEncoding.DecodeString(inSecret)
	if err != nil {
		t.Fatal(err)
	}
	cm := secret.DeepCopy()
	cm.SetKind("ConfigMap")
	unstructured.RemoveNestedField(cm.Object, "type")
	if err := unstructured.SetNestedField(cm.Object, string(once), "data", "release"); err != nil {
		t.Fatal(err)
	}
	return cm
}

// With HELM_DRIVER=configmap, Helm keeps the same labels and data in a
// ConfigMap, base64'd once; when the configmaps driver is named, the
// release is read from there, and its writes wait on the ConfigMaps'
// watch.
func TestHelmConfigMapDriver(t *testing.T) {
	secret := helmSecret(t, "web", 3, "deployed", "1.4.2", 100)
	b := NewBook(Options{HelmStorage: []string{HelmConfigMaps}})
	b.Observe("", "configmaps", helmConfigMap(t, secret))
	b.Observe("", "secrets", helmSecret(t, "other", 1, "deployed", "0.1.0", 500)) // the Secrets' watch is far ahead
	r, settled := b.Release(helmManaged, "120")
	if r.Revision != 3 || r.Chart != "web-1.4.2" || settled {
		t.Errorf("from a ConfigMap: %+v settled=%v, want revision 3, chart web-1.4.2, waiting on the ConfigMaps' watch", *r, settled)
	}
	if got, _ := chartOf(secret, false); got != (record.Release{}) {
		t.Errorf("a Secret's data read as a ConfigMap's: %+v, want nothing", got)
	}
}

// A record is believed only where Helm keeps them (Secrets of Helm's
// type unless the configmaps driver is named), labelled and named as
// Helm does; a forged one, observed or deleted, changes nothing, and
// two records of one revision that disagree name no revision.
func TestForgedHelmRecords(t *testing.T) {
	real1 := helmSecret(t, "web", 1, "deployed", "1.0.0", 100)
	forged1 := helmConfigMap(t, helmSecret(t, "web", 1, "deployed", "6.6.6", 110))
	forged2 := helmConfigMap(t, helmSecret(t, "web", 2, "deployed", "6.6.6", 111))
	opaque2 := helmSecret(t, "web", 2, "deployed", "6.6.6", 112)
	opaque2.Object["type"] = "Opaque"
	misnamed2 := helmSecret(t, "web", 2, "deployed", "6.6.6", 113)
	misnamed2.SetName("not-helms")
	type step struct {
		forget   bool
		resource string
		obj      *unstructured.Unstructured
	}
	for _, tc := range []struct {
		name    string
		storage []string
		steps   []step
		want    string // the release's String() at resourceVersion 200
	}{
		{"a ConfigMap, secrets driver", nil, []step{{false, "secrets", real1}, {false, "configmaps", forged1}, {false, "configmaps", forged2}}, "release web rev 1, chart web-1.0.0"},
		{"a forged ConfigMap deleted", nil, []step{{false, "secrets", real1}, {true, "configmaps", forged1}}, "release web rev 1, chart web-1.0.0"},
		{"a Secret of another type", nil, []step{{false, "secrets", real1}, {false, "secrets", opaque2}}, "release web rev 1, chart web-1.0.0"},
		{"a Secret named otherwise", nil, []step{{false, "secrets", real1}, {false, "secrets", misnamed2}}, "release web rev 1, chart web-1.0.0"},
		{"both drivers, records disagree", []string{HelmSecrets, HelmConfigMaps}, []step{{false, "secrets", real1}, {false, "configmaps", forged1}}, "release web"},
		{"both drivers, one of two deleted", []string{HelmSecrets, HelmConfigMaps}, []step{{false, "secrets", real1}, {false, "configmaps", forged1}, {true, "configmaps", forged1}}, "release web rev 1, chart web-1.0.0"},
		{"both drivers, records agree", []string{HelmSecrets, HelmConfigMaps}, []step{{false, "secrets", real1}, {false, "configmaps", helmConfigMap(t, real1)}}, "release web rev 1, chart web-1.0.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBook(Options{HelmStorage: tc.storage})
			for _, s := range tc.steps {
				if s.forget {
					b.Forget("", s.resource, s.obj)
				} else {
					b.Observe("", s.resource, s.obj)
				}
			}
			if r, _ := b.Release(helmManaged, "200"); r.String() != tc.want {
				t.Errorf("%q, want %q", r.String(), tc.want)
			}
		})
	}
}

// A Flux HelmRelease names the Helm release it made last (v2's
// status.history), or the chart version it applied (v2beta1), or while
// it reconciles the chart version it is applying, with no revision.
func TestHelmReleaseState(t *testing.T) {
	v2 := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "web", "namespace": "flux-system", "resourceVersion": "10"},
		"status": map[string]any{"history": []any{map[string]any{"chartName": "web", "chartVersion": "1.4.2", "appVersion": "2.0", "version": int64(7), "status": "deployed"}},
			"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "UpgradeSucceeded"}}}}}
	want := record.Release{Tool: "flux", Kind: "HelmRelease", Namespace: "flux-system", Name: "web", Revision: 7, Status: "UpgradeSucceeded", Chart: "web-1.4.2", AppVersion: "2.0"}
	if got := helmReleaseState(v2); got != want {
		t.Errorf("v2: %+v, want %+v", got, want)
	}
	v2beta1 := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "web", "namespace": "flux-system"},
		"spec":     map[string]any{"chart": map[string]any{"spec": map[string]any{"chart": "web"}}},
		"status":   map[string]any{"lastAppliedRevision": "1.4.1"}}}
	if got := helmReleaseState(v2beta1); got.Chart != "web-1.4.1" {
		t.Errorf("v2beta1: %+v, want chart web-1.4.1", got)
	}
	status := v2.Object["status"].(map[string]any)
	status["lastAttemptedRevision"] = "1.5.0"
	status["conditions"] = []any{map[string]any{"type": "Reconciling", "status": "True", "reason": "Progressing"}}
	want = record.Release{Tool: "flux", Kind: "HelmRelease", Namespace: "flux-system", Name: "web", Status: "Reconciling", Chart: "web-1.5.0"}
	if got := helmReleaseState(v2); got != want {
		t.Errorf("v2 upgrading: %+v, want %+v", got, want)
	}
}

// A release's manifest declares its objects: found by kind, namespace
// and name (a chart that names no namespace installs into the
// release's), integers as the API server has them, escapes undone;
// never a Secret, nothing of the values; the newest revision's alone.
func TestHelmManifestDeclaresItsObjects(t *testing.T) {
	manifest := func(replicas int, note string) string {
		return "---\n# Source: web/templates/secret.yaml\napiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  password: " + canary +
			"\n---\n# Source: web/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: shop\ndata:\n  note: \"" + note + "\"\n" +
			"---\n# Source: web/templates/deploy.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: " + fmt.Sprint(replicas) + "\n---\n# only a comment\n"
	}
	b := NewBook(Options{})
	first := helmSecretWith(t, "web", 1, "superseded", "1.0.0", 10, manifest(2, "a <b> & ü"))
	b.Observe("", "secrets", first)
	if b.Declared("shop", "web", "ConfigMap", "shop", "settings") != nil {
		t.Fatal("a superseded revision's manifest is read (a first list of ten revisions would read ten)")
	}
	b = NewBook(Options{})
	first.SetLabels(map[string]string{"owner": "helm", "name": "web", "version": "1", "status": "deployed"})
	b.Observe("", "secrets", first)
	if cm := b.Declared("shop", "web", "ConfigMap", "shop", "settings"); cm == nil || cm["data"].(map[string]any)["note"] != "a <b> & ü" {
		t.Fatalf("the ConfigMap as revision 1 declares it: %v", cm)
	}
	b.Observe("", "secrets", helmSecretWith(t, "web", 2, "deployed", "1.0.1", 20, manifest(3, "b")))
	deploy := b.Declared("shop", "web", "Deployment", "shop", "web")
	if replicas, _, _ := unstructured.NestedFieldNoCopy(deploy, "spec", "replicas"); replicas != int64(3) {
		t.Errorf("the Deployment's replicas as revision 2 declares them: %#v (%T)", replicas, replicas)
	}
	if cm := b.Declared("shop", "web", "ConfigMap", "shop", "settings"); cm == nil || cm["data"].(map[string]any)["note"] != "b" {
		t.Errorf("the ConfigMap as the newest revision declares it: %v", cm)
	}
	if b.Declared("shop", "web", "Secret", "shop", "creds") != nil || b.Declared("shop", "web", "ConfigMap", "other", "settings") != nil {
		t.Error("a Secret, or an object of another namespace, is declared")
	}
	b.mu.Lock()
	kept := fmt.Sprint(b.helm)
	for _, rev := range b.helm["shop/web"].revisions {
		for _, c := range rev.claims {
			kept += fmt.Sprint(c.objects)
		}
	}
	older := b.helm["shop/web"].revisions[1].claims[sourceSecrets].objects
	b.mu.Unlock()
	if strings.Contains(kept, canary) {
		t.Error("the book keeps the values' password")
	}
	if older != nil {
		t.Error("an older revision's manifest is still kept")
	}
}

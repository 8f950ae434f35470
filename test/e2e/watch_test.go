package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/kubediff/kubediff/internal/cli"
	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/record"
)

var bg = context.Background()

// change is the part of a FieldChange a test compares.
type change struct {
	Op, Path string
	From, To any
}

func changesOf(c record.Change) []change {
	var out []change
	for _, fc := range c.Changes {
		out = append(out, change{fc.Op, fc.Path, fc.From, fc.To})
	}
	return out
}

func recordTypes(records []record.Change) []string {
	var out []string
	for _, c := range records {
		out = append(out, c.Type)
	}
	return out
}

func TestConfigMapAddedUpdatedDeleted(t *testing.T) {
	ns := newNamespace(t)
	w := startWatch(t, "-n", ns)

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Data: map[string]string{"k": "v1", "other": "x"}}
	created, err := clients.CoreV1().ConfigMaps(ns).Create(bg, cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"data":{"k":"v2"}}`)
	if _, err := clients.CoreV1().ConfigMaps(ns).Patch(bg, "app", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := clients.CoreV1().ConfigMaps(ns).Delete(bg, "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	got := w.waitRecords("ConfigMap", ns, "app", 3)
	if want := []string{"added", "updated", "deleted"}; !reflect.DeepEqual(recordTypes(got), want) {
		t.Fatalf("record types = %v, want %v", recordTypes(got), want)
	}
	for _, c := range got {
		if c.APIVersion != "v1" || c.Resource != "configmaps" || c.UID != string(created.UID) || c.ResourceVersion == "" {
			t.Errorf("record identity wrong: %+v", c)
		}
	}
	wantChanges := []change{{record.OpReplace, "/data/k", "v1", "v2"}}
	if !reflect.DeepEqual(changesOf(got[1]), wantChanges) {
		t.Errorf("update changes = %+v, want %+v", changesOf(got[1]), wantChanges)
	}
	if got[1].Changed != "data.k" {
		t.Errorf("changed summary = %q, want %q", got[1].Changed, "data.k")
	}
}

// TestWithoutStreamingLists: with client-go's streaming lists off, as
// against API servers that lack them, the reflectors list with the
// dynamic client and watch with kubediff's decoder; changes are reported
// the same, and what existed before is not.
func TestWithoutStreamingLists(t *testing.T) {
	ns := newNamespace(t)
	for i := range 3 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("old-%d", i)}, Data: map[string]string{"k": "v1"}}
		if _, err := clients.CoreV1().ConfigMaps(ns).Create(bg, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w := startBinaryWithEnv(t, []string{"KUBE_FEATURE_WatchListClient=false"}, "watch", "-o", "json", "-n", ns, "--resources", "configmaps")

	if _, err := clients.CoreV1().ConfigMaps(ns).Patch(bg, "old-1", types.MergePatchType, []byte(`{"data":{"k":"v2"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := clients.CoreV1().ConfigMaps(ns).Delete(bg, "old-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	updated := w.waitRecords("ConfigMap", ns, "old-1", 1)
	if want := []change{{record.OpReplace, "/data/k", "v1", "v2"}}; updated[0].Type != "updated" || !reflect.DeepEqual(changesOf(updated[0]), want) {
		t.Errorf("update = %s %+v, want %+v", updated[0].Type, changesOf(updated[0]), want)
	}
	if deleted := w.waitRecords("ConfigMap", ns, "old-2", 1); deleted[0].Type != "deleted" {
		t.Errorf("old-2: %s, want deleted", deleted[0].Type)
	}
	for _, c := range w.records() {
		if c.Name == "old-0" {
			t.Errorf("unchanged old-0 reported: %+v", c)
		}
	}
}

func TestDeploymentScaleImageDelete(t *testing.T) {
	ns := newNamespace(t)
	w := startWatch(t, "--namespace", ns, "--resources", "deploy")

	kubectl(t, "", "-n", ns, "create", "deployment", "web", "--image=nginx:1.27", "--replicas=1")
	kubectl(t, "", "-n", ns, "scale", "deployment", "web", "--replicas=3")
	kubectl(t, "", "-n", ns, "set", "image", "deployment/web", "nginx=nginx:1.28")
	kubectl(t, "", "-n", ns, "delete", "deployment", "web")

	got := w.waitRecords("Deployment", ns, "web", 4)
	if want := []string{"added", "updated", "updated", "deleted"}; !reflect.DeepEqual(recordTypes(got), want) {
		t.Fatalf("record types = %v, want %v\n%s", recordTypes(got), want, w.stdout.String())
	}
	if want := []change{{record.OpReplace, "/spec/replicas", float64(1), float64(3)}}; !reflect.DeepEqual(changesOf(got[1]), want) {
		t.Errorf("scale changes = %+v, want %+v", changesOf(got[1]), want)
	}
	if want := []change{{record.OpReplace, "/spec/template/spec/containers/0/image", "nginx:1.27", "nginx:1.28"}}; !reflect.DeepEqual(changesOf(got[2]), want) {
		t.Errorf("image changes = %+v, want %+v", changesOf(got[2]), want)
	}
	// --resources deploy: nothing but Deployments is reported.
	for _, c := range w.records() {
		if c.Kind != "Deployment" {
			t.Errorf("unexpected record for %s %s", c.Kind, c.Name)
		}
	}
}

func TestCustomResource(t *testing.T) {
	crd := installWidgetCRD(t)
	ns := newNamespace(t)
	w := startWatch(t, "-n", ns)

	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v1", Resource: "widgets"}
	dyn := dynamic.NewForConfigOrDie(env.Config).Resource(gvr).Namespace(ns)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": crd.Spec.Group + "/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "gizmo"},
		"spec":     map[string]any{"size": int64(1), "color": "blue"},
	}}
	if _, err := dyn.Create(bg, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Patch(bg, "gizmo", types.MergePatchType, []byte(`{"spec":{"color":"red"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := dyn.Delete(bg, "gizmo", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	got := w.waitRecords("Widget", ns, "gizmo", 3)
	if want := []string{"added", "updated", "deleted"}; !reflect.DeepEqual(recordTypes(got), want) {
		t.Fatalf("record types = %v, want %v", recordTypes(got), want)
	}
	if got[1].APIVersion != crd.Spec.Group+"/v1" || got[1].Resource != "widgets" {
		t.Errorf("record identity = %s %s", got[1].APIVersion, got[1].Resource)
	}
	if want := []change{{record.OpReplace, "/spec/color", "blue", "red"}}; !reflect.DeepEqual(changesOf(got[1]), want) {
		t.Errorf("changes = %+v, want %+v", changesOf(got[1]), want)
	}
}

// TestExistingObjectsAreNotReported is the foundation issue's acceptance
// check, with the real binary and the real kubectl: 200 ConfigMaps exist
// before kubediff starts and none is reported; one patch yields exactly one
// record with exactly one change.
func TestExistingObjectsAreNotReported(t *testing.T) {
	ns := newNamespace(t)
	for i := range 200 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}, Data: map[string]string{"k": "v1"}}
		if _, err := clients.CoreV1().ConfigMaps(ns).Create(bg, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w := startBinary(t, "watch", "-o", "json", "-n", ns)

	start := time.Now()
	kubectl(t, "", "-n", ns, "patch", "configmap", "cm-7", "--type", "merge", "-p", `{"data":{"k":"v2"}}`)
	w.waitRecords("ConfigMap", ns, "cm-7", 1)
	t.Logf("patch → record: %s", time.Since(start).Round(time.Millisecond))

	// Records are written in order, so had anything been reported for the
	// existing objects it would precede cm-7's record.
	all := w.records()
	if len(all) != 1 {
		t.Fatalf("want exactly 1 record, got %d:\n%s", len(all), w.stdout.String())
	}
	if all[0].Type != "updated" || all[0].Name != "cm-7" {
		t.Fatalf("record = %+v", all[0])
	}
	if want := []change{{record.OpReplace, "/data/k", "v1", "v2"}}; !reflect.DeepEqual(changesOf(all[0]), want) {
		t.Fatalf("changes = %+v, want %+v", changesOf(all[0]), want)
	}

	kubectl(t, "", "-n", ns, "create", "configmap", "fresh", "--from-literal=a=b")
	kubectl(t, "", "-n", ns, "delete", "configmap", "cm-9")
	w.waitRecords("ConfigMap", ns, "cm-9", 1)
	if got := recordTypes(w.recordsFor("ConfigMap", ns, "fresh")); !reflect.DeepEqual(got, []string{"added"}) {
		t.Errorf("fresh records = %v, want [added]", got)
	}
	if got := recordTypes(w.recordsFor("ConfigMap", ns, "cm-9")); !reflect.DeepEqual(got, []string{"deleted"}) {
		t.Errorf("cm-9 records = %v, want [deleted]", got)
	}
	if strings.Contains(w.stdout.String(), "level=") {
		t.Errorf("operational log lines leaked into stdout")
	}
}

func TestIgnoredOnlyUpdateIsNotReported(t *testing.T) {
	ns := newNamespace(t)
	w := startWatch(t, "-n", ns, "--ignore-path", "/metadata/labels/heartbeat")
	cms := clients.CoreV1().ConfigMaps(ns)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "quiet", Labels: map[string]string{"heartbeat": "1"}}}
	if _, err := cms.Create(bg, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// An ignored label and a last-applied annotation change, then a real one.
	for _, p := range []string{
		`{"metadata":{"labels":{"heartbeat":"2"}}}`,
		`{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"}}}`,
		`{"data":{"real":"change"}}`,
	} {
		if _, err := cms.Patch(bg, "quiet", types.MergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	got := w.waitRecords("ConfigMap", ns, "quiet", 2)
	if want := []string{"added", "updated"}; !reflect.DeepEqual(recordTypes(got), want) {
		t.Fatalf("record types = %v, want %v", recordTypes(got), want)
	}
	if want := []change{{record.OpAdd, "/data", nil, map[string]any{"real": "change"}}}; !reflect.DeepEqual(changesOf(got[1]), want) {
		t.Errorf("changes = %+v, want %+v", changesOf(got[1]), want)
	}
}

func TestResourcesListsBuiltinsAndCRD(t *testing.T) {
	crd := installWidgetCRD(t)
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	if code := runCLI(stdout, stderr, "resources", "--kubeconfig", env.Kubeconfig, "-o", "json"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var rows []struct{ Group, Resource, Status, Reason string }
	if err := json.Unmarshal([]byte(stdout.String()), &rows); err != nil {
		t.Fatalf("resources -o json: %v\n%s", err, stdout.String())
	}
	status := map[string]string{}
	for _, r := range rows {
		status[r.Resource+"."+r.Group] = r.Status + ": " + r.Reason
		if strings.Contains(r.Resource, "/") {
			t.Errorf("subresource listed: %s", r.Resource)
		}
	}
	for typ, want := range map[string]string{
		"configmaps.":               "watched: ",
		"deployments.apps":          "watched: ",
		"widgets." + crd.Spec.Group: "watched: ",
		"events.":                   "excluded: Event objects are changes only when named in resources (diff.defaults.events)",
		"events.events.k8s.io":      "watched: " + discovery.EventFactsReason,
		"bindings.":                 "not watchable: no list and watch verbs",
		"customresourcedefinitions.apiextensions.k8s.io": "watched: ",
	} {
		if status[typ] != want {
			t.Errorf("%s: %q, want %q", typ, status[typ], want)
		}
	}
	// The table form has the same rows.
	stdout = &syncBuffer{}
	if code := runCLI(stdout, stderr, "resources", "--kubeconfig", env.Kubeconfig); code != 0 || !strings.Contains(stdout.String(), "STATUS") || !strings.Contains(stdout.String(), "widgets") {
		t.Fatalf("exit %d, table:\n%s", code, stdout.String())
	}
}

func runCLI(stdout, stderr *syncBuffer, args ...string) int {
	return cli.Run(bg, args, stdout, stderr)
}

// installWidgetCRD installs a namespaced Widget CRD in a group unique to the
// test and waits until it is Established.
func installWidgetCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	group := fmt.Sprintf("g%d.e2e.kubediff.io", time.Now().UnixNano()%1000000)
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget", Plural: "widgets", Singular: "widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"size":  {Type: "integer"},
							"color": {Type: "string"},
						}},
					},
				}},
			}},
		},
	}
	installCRD(t, crd, "v1")
	return crd
}

// installCRD creates crd, deletes it after the test, and returns once it
// is Established and discovery serves version (discovery lags the
// condition slightly).
func installCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, version string) {
	t.Helper()
	ext := apiextensionsclient.NewForConfigOrDie(env.Config).ApiextensionsV1().CustomResourceDefinitions()
	if _, err := ext.Create(bg, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ext.Delete(bg, crd.Name, metav1.DeleteOptions{}) })
	eventually(t, "CRD "+crd.Name+" to be established and discoverable", func() bool {
		got, err := ext.Get(bg, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				_, err := clients.Discovery().ServerResourcesForGroupVersion(crd.Spec.Group + "/" + version)
				return err == nil
			}
		}
		return false
	})
}

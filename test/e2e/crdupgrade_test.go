package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// TestCRDUpgradedInPlaceIsComparedByItsNewKeys: a CRD whose schema is
// applied again with a list newly keyed by name (an operator's upgrade)
// has that list compared by key from the next rediscovery on, without a
// restart: spec.parts[name=bolt].count, not spec.parts[1].count.
func TestCRDUpgradedInPlaceIsComparedByItsNewKeys(t *testing.T) {
	ns := newNamespace(t)
	group := fmt.Sprintf("u%d.e2e.kubediff.io", time.Now().UnixNano()%1000000)
	parts := apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object", Required: []string{"name"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{"name": {Type: "string"}, "count": {Type: "integer"}},
	}}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "fixtures." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Fixture", Plural: "fixtures", Singular: "fixture", ListKind: "FixtureList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object",
						Properties: map[string]apiextensionsv1.JSONSchemaProps{"parts": parts}}}}}}},
		},
	}
	installCRD(t, crd, "v1")
	w := startWatch(t, "-n", ns, "--rediscovery-interval", "2s")
	fixtures := dynamic.NewForConfigOrDie(env.Config).Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "fixtures"}).Namespace(ns)
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Fixture", "metadata": map[string]any{"name": "f"},
		"spec": map[string]any{"parts": []any{map[string]any{"name": "nut", "count": int64(1)}, map[string]any{"name": "bolt", "count": int64(1)}}}}}
	if _, err := fixtures.Create(bg, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Before the upgrade, kubediff reads the schema: parts by position.
	if _, err := fixtures.Patch(bg, "f", types.MergePatchType, []byte(`{"spec":{"parts":[{"name":"nut","count":1},{"name":"bolt","count":1},{"name":"cap","count":1}]}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := w.waitRecords("Fixture", ns, "f", 2); !strings.Contains(got[1].Changed, "spec.parts[2]") {
		t.Fatalf("before the upgrade, parts compared by position: %+v", got[1])
	}

	// The upgrade: the same schema, with parts keyed by name.
	ext := apiextensionsclient.NewForConfigOrDie(env.Config).ApiextensionsV1().CustomResourceDefinitions()
	keyed := `{"spec":{"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"parts":` +
		`{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],"items":{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"count":{"type":"integer"}}}}}}}}}}]}}`
	if _, err := ext.Patch(bg, crd.Name, types.MergePatchType, []byte(keyed), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	count := int64(1)
	eventually(t, "a change of bolt's count reported by its key", func() bool {
		count++
		patch := fmt.Sprintf(`{"spec":{"parts":[{"name":"nut","count":1},{"name":"bolt","count":%d},{"name":"cap","count":1}]}}`, count)
		if _, err := fixtures.Patch(bg, "f", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("count: %d → %d", count-1, count)
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			for _, c := range w.recordsFor("Fixture", ns, "f") {
				if strings.Contains(c.Changed, "spec.parts[name=bolt].count") {
					return true
				}
			}
			if strings.Contains(w.stdout.String(), want) {
				break
			}
		}
		return false
	})
}

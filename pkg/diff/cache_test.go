package diff

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestCacheTransform(t *testing.T) {
	d, err := New(Options{Rules: Rules{Defaults: AllDefaults}, Redact: RedactOptions{Keys: []string{"*password*"}}})
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{
			"name": "db", "resourceVersion": "7", "generation": int64(3),
			"annotations": map[string]any{"kubectl.kubernetes.io/last-applied-configuration": `{"stringData":{"password":"hunter2"}}`},
			"managedFields": []any{map[string]any{"manager": "kubectl", "operation": "Apply", "time": "2026-11-22T10:00:00Z",
				"fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:data": map[string]any{}}}},
		},
		"data": map[string]any{"password": "aHVudGVyMg=="},
	}}
	out, err := d.CacheTransform(secrets)(u)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*unstructured.Unstructured)
	meta := got.Object["metadata"].(map[string]any)
	if got.GetResourceVersion() != "7" {
		t.Error("resourceVersion must stay: watches resume from it")
	}
	if want := []any{map[string]any{"manager": "kubectl", "operation": "Apply", "time": "2026-11-22T10:00:00Z",
		"fieldsV1": map[string]any{"f:data": map[string]any{}}}}; !reflect.DeepEqual(meta["managedFields"], want) {
		t.Errorf("managedFields = %v, want the entry with its field set's first levels", meta["managedFields"])
	}
	if _, ok := meta["generation"]; ok {
		t.Error("an ignored field stayed in the cache")
	}
	if _, ok := meta["annotations"]; ok {
		t.Error("the last-applied annotation (a copy of the Secret) stayed in the cache")
	}
	if v := got.Object["data"].(map[string]any)["password"].(string); !strings.HasPrefix(v, "*** redacted ") {
		t.Errorf("Secret value cached in the clear: %q", v)
	}
}

package managedfields

import (
	"encoding/json"
	"reflect"
	"testing"
)

// A Deployment's entry as `kubectl create` leaves it, cut short.
const created = `{"f:metadata":{"f:labels":{".":{},"f:app":{}}},
 "f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{}}}}}},
 "f:data":{".":{},"f:a~b/c":{}}}`

func TestOwnershipOf(t *testing.T) {
	var whole map[string]any
	if err := json.Unmarshal([]byte(created), &whole); err != nil {
		t.Fatal(err)
	}
	slim := map[string]any{"metadata": map[string]any{"managedFields": []any{map[string]any{"manager": "m", "fieldsType": "FieldsV1", "fieldsV1": deepCopy(t, whole)}}}}
	Slim(slim)
	slimSet := slim["metadata"].(map[string]any)["managedFields"].([]any)[0].(map[string]any)["fieldsV1"].(map[string]any)
	for path, want := range map[string]Ownership{
		"/spec/replicas":                         Owned,
		"/spec":                                  Owned,    // replaced whole: it owns a part
		"/spec/paused":                           NotOwned, // another field of spec
		"/metadata/labels/app":                   Owned,
		"/metadata/labels/tier":                  NotOwned,
		"/spec/template/spec/containers/0/image": MaybeOwned, // below Depth: cannot tell
		"/spec/template/metadata":                NotOwned,
		"/data/a~0b~1c":                          Owned,      // escaped as a JSON Pointer
		"/data/a~0b~1c/x":                        MaybeOwned, // under a leaf: an atomic field, or a list
		"/data/d":                                NotOwned,
		"/status/replicas":                       NotOwned,
	} {
		for name, set := range map[string]map[string]any{"whole": whole, "slim": slimSet} {
			if got := OwnershipOf(set, path); got != want {
				t.Errorf("%s: OwnershipOf(%s) = %v, want %v", name, path, got, want)
			}
		}
	}
	if OwnershipOf(map[string]any{}, "/spec/replicas") != NotOwned || OwnershipOf(nil, "/spec") != NotOwned {
		t.Error("an empty field set owns something")
	}
}

func TestSlimKeepsTheFirstLevelsOfFieldsOnly(t *testing.T) {
	var set map[string]any
	if err := json.Unmarshal([]byte(created), &set); err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{"metadata": map[string]any{"managedFields": []any{map[string]any{
		"manager": "kubectl-create", "operation": "Update", "apiVersion": "apps/v1", "time": "2026-11-22T01:19:10Z", "fieldsType": "FieldsV1", "fieldsV1": set}}}}
	Slim(obj)
	want := map[string]any{"manager": "kubectl-create", "operation": "Update", "time": "2026-11-22T01:19:10Z", "fieldsV1": map[string]any{
		"f:metadata": map[string]any{"f:labels": map[string]any{"f:app": map[string]any{}}},
		"f:spec":     map[string]any{"f:replicas": map[string]any{}, "f:template": map[string]any{"f:spec": map[string]any{}}},
		"f:data":     map[string]any{"f:a~b/c": map[string]any{}},
	}}
	if got := obj["metadata"].(map[string]any)["managedFields"].([]any)[0]; !reflect.DeepEqual(got, want) {
		t.Errorf("slim entry\n%v\nwant\n%v", got, want)
	}
}

func deepCopy(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(v)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

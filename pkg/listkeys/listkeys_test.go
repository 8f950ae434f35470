package listkeys

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/diff"
)

func load(t *testing.T, file string, gv schema.GroupVersion) map[string]*diff.KeyTree {
	t.Helper()
	data, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	trees, err := FromOpenAPI(data, gv)
	if err != nil {
		t.Fatal(err)
	}
	return trees
}

// at follows field names ("[]" for list items) down a KeyTree.
func at(tree *diff.KeyTree, path ...string) *diff.KeyTree {
	for _, p := range path {
		if tree == nil {
			return nil
		}
		if p == "[]" {
			tree = tree.Items
		} else {
			tree = tree.Fields[p]
		}
	}
	return tree
}

func TestBuiltInKeysFromTheServersOpenAPI(t *testing.T) {
	kinds := load(t, "apps-v1.json", schema.GroupVersion{Group: "apps", Version: "v1"})
	dep := kinds["Deployment"]
	if dep == nil {
		t.Fatal("no Deployment in apps/v1")
	}
	pod := []string{"spec", "template", "spec"}
	for _, tt := range []struct {
		path []string
		want []string
	}{
		{append(pod, "containers"), []string{"name"}},
		{append(pod, "containers", "[]", "env"), []string{"name"}},
		{append(pod, "containers", "[]", "ports"), []string{"containerPort", "protocol"}},
		{append(pod, "containers", "[]", "volumeMounts"), []string{"mountPath"}},
		{append(pod, "volumes"), []string{"name"}},
		{[]string{"status", "conditions"}, []string{"type"}},
		{append(pod, "containers", "[]", "args"), nil},
	} {
		node := at(dep, tt.path...)
		if node == nil {
			t.Errorf("%v: no schema node", tt.path)
			continue
		}
		if !reflect.DeepEqual(node.Keys, tt.want) {
			t.Errorf("%v keys = %v, want %v", tt.path, node.Keys, tt.want)
		}
	}
	for _, kind := range []string{"StatefulSet", "DaemonSet", "ReplicaSet"} {
		if kinds[kind] == nil {
			t.Errorf("no KeyTree for %s", kind)
		}
	}
}

func TestCustomResourceKeysFromItsCRDSchema(t *testing.T) {
	kinds := load(t, "demo.kubediff.io-v1.json", schema.GroupVersion{Group: "demo.kubediff.io", Version: "v1"})
	if got := at(kinds["Widget"], "spec", "parts"); got == nil || !reflect.DeepEqual(got.Keys, []string{"name"}) {
		t.Fatalf("Widget spec.parts = %+v, want keyed by name", got)
	}
}

// A schema's additionalProperties may be true or false rather than a
// schema, and a document may be damaged: neither stops the trees, or
// the damage is said.
func TestAdditionalPropertiesMayBeABoolAndADamagedDocumentIsAnError(t *testing.T) {
	doc := `{"components":{"schemas":{"x.Thing":{"x-kubernetes-group-version-kind":[{"group":"x","version":"v1","kind":"Thing"}],
		"properties":{"open":{"additionalProperties":true},"closed":{"additionalProperties":false},
		"byName":{"additionalProperties":{"type":"array","x-kubernetes-list-map-keys":["name"],"items":{"type":"object"}}}}}}}}`
	trees, err := FromOpenAPI([]byte(doc), schema.GroupVersion{Group: "x", Version: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := at(trees["Thing"], "byName"); got == nil || got.Values == nil || !reflect.DeepEqual(got.Values.Keys, []string{"name"}) {
		t.Errorf("byName: %+v, want its values keyed by name", got)
	}
	if got := at(trees["Thing"], "open"); got == nil || got.Values != nil {
		t.Errorf("open: %+v", got)
	}
	if _, err := FromOpenAPI([]byte(doc[:len(doc)/2]), schema.GroupVersion{Group: "x", Version: "v1"}); err == nil {
		t.Error("half a document read without an error")
	}
}

// BenchmarkFromOpenAPI is the heap a group's first update costs for its
// list keys: core/v1's 1.6 MB document decoded whole (as it was until
// 2026-11-27) and decoded for the key trees only. B/op is the figure.
func BenchmarkFromOpenAPI(b *testing.B) {
	data, err := os.ReadFile("testdata/core-v1.json")
	if err != nil {
		b.Fatal(err)
	}
	gv := schema.GroupVersion{Version: "v1"}
	b.Run("decoded-whole", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var doc map[string]any
			if err := json.Unmarshal(data, &doc); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(data)), "document-bytes")
	})
	b.Run("key-trees", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := FromOpenAPI(data, gv); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(data)), "document-bytes")
	})
}

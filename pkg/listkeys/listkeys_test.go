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
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return FromOpenAPI(doc, gv)
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

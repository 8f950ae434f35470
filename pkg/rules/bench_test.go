package rules

import (
	"os"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubediff/kubediff/pkg/record"
)

// BenchmarkJudge20Rules is the rules' cost on a ConfigMap update that
// none matches, with the bench's 20 rules (hack/bench/rules20.yaml: no
// rule's CEL runs) and with one whose CEL runs on every ConfigMap update
// (rules20-cel.yaml).
func BenchmarkJudge20Rules(b *testing.B) {
	for _, file := range []string{"rules20.yaml", "rules20-cel.yaml"} {
		b.Run(file, func(b *testing.B) { judge20(b, "../../hack/bench/"+file) })
	}
}

func judge20(b *testing.B, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	var doc struct {
		Rules    []Spec      `json:"rules"`
		RulePack []PackEntry `json:"rulePack"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		b.Fatal(err)
	}
	set, err := Compile(doc.Rules, doc.RulePack)
	if err != nil {
		b.Fatal(err)
	}
	if set.Len() != 20 {
		b.Fatalf("%d rules", set.Len())
	}
	obj := func(v string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "cm-1", "namespace": "bench-3", "labels": map[string]any{"app": "bench"}},
			"data":     map[string]any{"k": v, "other": "x"}}
	}
	c := &record.Change{Type: record.Updated, APIVersion: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "bench-3", Name: "cm-1",
		Labels: map[string]string{"app": "bench"}, Manager: &record.Manager{Name: "bench", Operation: "Update"}, Changed: "data.k",
		Changes: []record.FieldChange{{Op: record.OpReplace, Path: "/data/k", Field: "data.k", From: "1", To: "2"}}}
	in := Input{Record: c, Object: obj("2"), OldObject: obj("1")}
	b.ReportAllocs()
	for b.Loop() {
		if v := set.Judge(in); len(v.Rules) != 0 || len(v.Failed) != 0 {
			b.Fatalf("verdict %+v", v)
		}
	}
}

package rules

import (
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// Every rule docs/rules.md shows compiles: a reader copies them.
func TestTheDocumentedRulesCompile(t *testing.T) {
	data, err := os.ReadFile("../../docs/rules.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(data), "```yaml\n")[1:]
	compiled := 0
	for _, b := range blocks {
		b, _, _ = strings.Cut(b, "```")
		if !strings.HasPrefix(b, "rules:") && !strings.HasPrefix(b, "rulePack:") {
			continue
		}
		var doc struct {
			Rules    []Spec      `json:"rules"`
			RulePack []PackEntry `json:"rulePack"`
		}
		if err := yaml.Unmarshal([]byte(b), &doc); err != nil {
			t.Fatalf("a block of docs/rules.md is not YAML: %v\n%s", err, b)
		}
		if _, err := Compile(doc.Rules, doc.RulePack); err != nil {
			t.Errorf("docs/rules.md: %v", err)
		}
		compiled += len(doc.Rules) + len(doc.RulePack)
	}
	if compiled < 14 {
		t.Errorf("compiled only %d rules of docs/rules.md", compiled)
	}
}

// The pack's table in docs/rules.md names every rule of the pack.
func TestTheDocsListThePack(t *testing.T) {
	data, err := os.ReadFile("../../docs/rules.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range PackNames() {
		if !strings.Contains(string(data), "| `"+name+"` |") {
			t.Errorf("docs/rules.md's pack table lacks %s", name)
		}
	}
}

package rules

import (
	"embed"
	"fmt"
	"path"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// packFiles are the built-in rules, one YAML file each, named after the
// rule: a rule's name, description, severity, when and summary, as a
// rule in the config file writes them. Adding a rule to the pack is
// adding a file.
//
//go:embed pack/*.yaml
var packFiles embed.FS

// PackRule is a built-in rule and what it is for.
type PackRule struct {
	Spec `json:",inline"`
	// Description says in a sentence what the rule catches.
	Description string `json:"description"`
}

// Pack returns the built-in rules, by name.
func Pack() ([]PackRule, error) {
	entries, err := packFiles.ReadDir("pack")
	if err != nil {
		return nil, fmt.Errorf("the rule pack: %w", err)
	}
	var out []PackRule
	for _, e := range entries {
		data, err := packFiles.ReadFile(path.Join("pack", e.Name()))
		if err != nil {
			return nil, fmt.Errorf("the rule pack: %w", err)
		}
		var r PackRule
		if err := yaml.UnmarshalStrict(data, &r); err != nil {
			return nil, fmt.Errorf("the rule pack's %s: %w", e.Name(), err)
		}
		if r.Name+".yaml" != e.Name() {
			return nil, fmt.Errorf("the rule pack's %s names the rule %q", e.Name(), r.Name)
		}
		out = append(out, r)
	}
	return out, nil
}

// PackNames returns the built-in rules' names, sorted.
func PackNames() []string {
	pack, _ := Pack() // the pack's own test reads it
	names := make([]string, 0, len(pack))
	for _, r := range pack {
		names = append(names, r.Name)
	}
	return names
}

// withPack returns specs and after them the pack's rules named in
// enabled, with an error for each name the pack does not have.
func withPack(specs []Spec, enabled []string) ([]Spec, []error) {
	if len(enabled) == 0 {
		return specs, nil
	}
	pack, err := Pack()
	if err != nil {
		return nil, []error{err}
	}
	all := slices.Clone(specs)
	var errs []error
	for _, name := range enabled {
		i := slices.IndexFunc(pack, func(r PackRule) bool { return r.Name == name })
		if i < 0 {
			errs = append(errs, fmt.Errorf("rulePack: %q is not a built-in rule (%s)", name, strings.Join(PackNames(), ", ")))
			continue
		}
		all = append(all, pack[i].Spec)
	}
	return all, errs
}

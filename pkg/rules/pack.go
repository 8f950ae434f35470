package rules

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/go-viper/mapstructure/v2"
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
	// NamespacesRequired says the rule is enabled only with namespaces
	// (drift-in-namespace: about the namespaces a team guards, and in
	// every namespace another rule of the pack already).
	NamespacesRequired bool `json:"namespacesRequired,omitempty"`
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

// PackEntry enables one rule of the pack (the rulePack key): by its name
// alone ("secret-deleted"), or as an object naming it with what the
// rule is given: the namespaces it is limited to (globs), and a
// severity of its own.
type PackEntry struct {
	Name       string   `mapstructure:"name" json:"name"`
	Namespaces []string `mapstructure:"namespaces" json:"namespaces,omitempty"`
	Severity   string   `mapstructure:"severity" json:"severity,omitempty"`
}

// packEntryFields is PackEntry without its decoding methods.
type packEntryFields PackEntry

// UnmarshalMapstructure reads a name or an object, strictly: a
// misspelt key is an error naming it.
func (e *PackEntry) UnmarshalMapstructure(in any) error {
	if name, ok := in.(string); ok {
		*e = PackEntry{Name: name}
		return nil
	}
	var fields packEntryFields
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{ErrorUnused: true, Result: &fields})
	if err != nil {
		return err
	}
	if err := dec.Decode(in); err != nil {
		return fmt.Errorf("a rule's name, or {name, namespaces, severity}: %w", err)
	}
	*e = PackEntry(fields)
	return nil
}

// UnmarshalJSON reads a name or an object, strictly.
func (e *PackEntry) UnmarshalJSON(data []byte) error {
	var name string
	if json.Unmarshal(data, &name) == nil {
		*e = PackEntry{Name: name}
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var fields packEntryFields
	if err := dec.Decode(&fields); err != nil {
		return fmt.Errorf("a rule's name, or {name, namespaces, severity}: %w", err)
	}
	*e = PackEntry(fields)
	return nil
}

// PackNamed enables the pack's rules named, with nothing given.
func PackNamed(names ...string) []PackEntry {
	out := make([]PackEntry, len(names))
	for i, n := range names {
		out[i] = PackEntry{Name: n}
	}
	return out
}

// withPack returns specs and after them the pack's rules enabled, with
// what each entry gives them, and an error for each name the pack does
// not have.
func withPack(specs []Spec, enabled []PackEntry) ([]Spec, []error) {
	if len(enabled) == 0 {
		return specs, nil
	}
	pack, err := Pack()
	if err != nil {
		return nil, []error{err}
	}
	all := slices.Clone(specs)
	var errs []error
	for _, e := range enabled {
		i := slices.IndexFunc(pack, func(r PackRule) bool { return r.Name == e.Name })
		if i < 0 {
			errs = append(errs, fmt.Errorf("rulePack: %q is not a built-in rule (%s)", e.Name, strings.Join(PackNames(), ", ")))
			continue
		}
		if pack[i].NamespacesRequired && len(e.Namespaces) == 0 {
			errs = append(errs, fmt.Errorf("rulePack: %s needs the namespaces it is about: {name: %s, namespaces: [GLOB, ...]}", e.Name, e.Name))
			continue
		}
		spec := pack[i].Spec
		if e.Severity != "" {
			spec.Severity = e.Severity
		}
		if len(e.Namespaces) > 0 {
			spec.Namespaces = e.Namespaces
		}
		all = append(all, spec)
	}
	return all, errs
}

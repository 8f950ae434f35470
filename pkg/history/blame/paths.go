package blame

import (
	"encoding/json"
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"
)

// A path names a place in an object the same way in every state: map
// keys, and list items by their name or type when each item of the list
// has a distinct one (a container, a condition), else by position. A
// container inserted before another then leaves the other's lines
// attributed to their own changes.
type path []string

// key is the path as a map key.
func (p path) key() string { return strings.Join(p, "\x00") }

// String is the path as people read it: spec.containers[name=web].image.
func (p path) String() string {
	var b strings.Builder
	for _, seg := range p {
		if !strings.HasPrefix(seg, "[") && b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	return b.String()
}

func (p path) with(seg string) path {
	out := make(path, len(p), len(p)+1)
	copy(out, p)
	return append(out, seg)
}

// itemKeys are the fields that name a list's items, tried in order.
var itemKeys = []string{"name", "type"}

// itemSegments are the path segments of a list's items.
func itemSegments(list []any) []string {
	segs := make([]string, len(list))
	for _, field := range itemKeys {
		seen := map[string]bool{}
		for i, item := range list {
			m, _ := item.(map[string]any)
			v, ok := m[field].(string)
			if !ok || seen[v] {
				seen = nil
				break
			}
			seen[v] = true
			segs[i] = "[" + field + "=" + v + "]"
		}
		if seen != nil {
			return segs
		}
	}
	for i := range list {
		segs[i] = fmt.Sprintf("[%d]", i)
	}
	return segs
}

// flatten maps every place in v to what is there: a leaf's JSON, or "{}"
// or "[]" for a map or list (whose own line changes only when it comes or
// goes).
func flatten(v any, at path, out map[string]string) {
	switch val := v.(type) {
	case map[string]any:
		out[at.key()] = "{}"
		for k, child := range val {
			flatten(child, at.with(k), out)
		}
	case []any:
		out[at.key()] = "[]"
		for i, seg := range itemSegments(val) {
			flatten(val[i], at.with(seg), out)
		}
	default:
		j, _ := json.Marshal(val)
		out[at.key()] = string(j)
	}
}

// yamlLines is obj as YAML (as `kubediff get` prints it), each line with
// the path it shows: the deepest place that starts on it, or for a line
// inside a multi-line string the string's place.
func yamlLines(obj map[string]any) ([]string, []path, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, nil, err
	}
	text, err := sigsyaml.JSONToYAML(raw)
	if err != nil {
		return nil, nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(text, &doc); err != nil {
		return nil, nil, err
	}
	lines := strings.Split(strings.TrimSuffix(string(text), "\n"), "\n")
	starts := make([]path, len(lines)+1)
	if len(doc.Content) == 1 {
		markStarts(doc.Content[0], obj, nil, starts)
	}
	paths := make([]path, len(lines))
	var current path
	for i := range lines {
		if starts[i+1] != nil {
			current = starts[i+1]
		}
		paths[i] = current
	}
	return lines, paths, nil
}

// markStarts notes, by line number (from 1), the place each node of the
// YAML tree starts, walking the decoded value v beside it to name list
// items as flatten does. Deeper places overwrite the ones they start on
// the line of ("- name: web" is the name's line).
func markStarts(n *yaml.Node, v any, at path, starts []path) {
	switch n.Kind {
	case yaml.MappingNode:
		m, _ := v.(map[string]any)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, child := n.Content[i], n.Content[i+1]
			p := at.with(k.Value)
			mark(starts, k.Line, p)
			markStarts(child, m[k.Value], p, starts)
		}
	case yaml.SequenceNode:
		list, _ := v.([]any)
		if len(list) != len(n.Content) {
			return
		}
		for i, seg := range itemSegments(list) {
			p := at.with(seg)
			mark(starts, n.Content[i].Line, p)
			markStarts(n.Content[i], list[i], p, starts)
		}
	}
}

func mark(starts []path, line int, p path) {
	if line > 0 && line < len(starts) {
		starts[line] = p
	}
}

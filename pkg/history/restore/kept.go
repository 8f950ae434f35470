package restore

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KeptField is a field a restore's server-side apply leaves as it is:
// the manifest does not set it (the object did not have it at the
// moment, or the restore leaves it to the API server), and another
// field manager owns it, so the apply neither removes nor takes it.
type KeptField struct {
	// Field is the field as records name them:
	// spec.template.spec.containers[name=app].env[name=FOO].
	Field string
	// By are the managers owning it: "kubectl-set (Update, 2026-11-23T21:03:00Z)".
	By []string
}

func (k KeptField) String() string { return k.Field + " (set by " + strings.Join(k.By, ", ") + ")" }

// Kept are the fields of an object after a server-side apply by manager
// (its managedFields) that other managers own and the apply does not set:
// what the object has beyond the manifest. A field the manifest sets is
// in manager's own entry, whoever else owns it too. The status is left
// out (a restore never sets it), and so are the annotations controllers
// rewrite on their own (controllerAnnotations).
func Kept(entries []metav1.ManagedFieldsEntry, manager string) ([]KeptField, error) {
	own := map[string]any{}
	for _, e := range entries {
		if e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "" {
			if err := fieldSet(e, &own); err != nil {
				return nil, err
			}
		}
	}
	by := map[string][]string{}
	for _, e := range entries {
		if (e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationApply) || e.Subresource == "status" {
			continue
		}
		var set map[string]any
		if err := fieldSet(e, &set); err != nil {
			return nil, err
		}
		owner := fmt.Sprintf("%s (%s", e.Manager, e.Operation)
		if e.Subresource != "" {
			owner += " of " + e.Subresource
		}
		if e.Time != nil {
			owner += ", " + e.Time.UTC().Format(time.RFC3339)
		}
		dropControllerAnnotations(set)
		for _, f := range notIn(set, own, "") {
			by[f] = append(by[f], owner+")")
		}
	}
	kept := make([]KeptField, 0, len(by))
	for _, f := range slices.Sorted(maps.Keys(by)) {
		kept = append(kept, KeptField{Field: f, By: by[f]})
	}
	return kept, nil
}

func fieldSet(e metav1.ManagedFieldsEntry, into *map[string]any) error {
	if e.FieldsV1 == nil {
		return nil
	}
	if err := json.Unmarshal(e.FieldsV1.GetRawBytes(), into); err != nil {
		return fmt.Errorf("managedFields of %s: %w", e.Manager, err)
	}
	return nil
}

// notIn are the topmost fields of the field set (fieldsV1) set that own
// does not have, named from at: a list item own lacks is named once,
// not with each of its fields.
func notIn(set, own map[string]any, at string) []string {
	var out []string
	for _, key := range slices.Sorted(maps.Keys(set)) {
		if key == "." || (at == "" && key == "f:status") {
			continue
		}
		path := at + pathPart(key)
		mine, ok := own[key].(map[string]any)
		if !ok {
			out = append(out, strings.TrimPrefix(path, "."))
			continue
		}
		sub, _ := set[key].(map[string]any)
		out = append(out, notIn(sub, mine, path)...)
	}
	return out
}

// pathPart names a field set's key as records name fields: f:spec is
// .spec, k:{"name":"app"} is [name=app], v:"x" is [x], i:0 is [0].
func pathPart(key string) string {
	kind, rest, _ := strings.Cut(key, ":")
	switch kind {
	case "f":
		return "." + rest
	case "k":
		var fields map[string]any
		if json.Unmarshal([]byte(rest), &fields) != nil {
			return "[" + rest + "]"
		}
		parts := make([]string, 0, len(fields))
		for _, k := range slices.Sorted(maps.Keys(fields)) {
			parts = append(parts, fmt.Sprintf("%s=%v", k, fields[k]))
		}
		return "[" + strings.Join(parts, ",") + "]"
	case "v":
		var v any
		if json.Unmarshal([]byte(rest), &v) == nil {
			return fmt.Sprintf("[%v]", v)
		}
	}
	return "[" + rest + "]"
}

// dropControllerAnnotations takes controllerAnnotations out of a field
// set, and the annotations and metadata they alone made the entry own.
func dropControllerAnnotations(set map[string]any) {
	meta, _ := set["f:metadata"].(map[string]any)
	annotations, _ := meta["f:annotations"].(map[string]any)
	for _, a := range controllerAnnotations {
		delete(annotations, "f:"+a)
	}
	if annotations != nil && onlyItself(annotations) {
		delete(meta, "f:annotations")
	}
	if meta != nil && onlyItself(meta) {
		delete(set, "f:metadata")
	}
}

// onlyItself says whether a field set's node owns nothing under it.
func onlyItself(node map[string]any) bool {
	_, self := node["."]
	return len(node) == 0 || (self && len(node) == 1)
}

package diff

import (
	"encoding/json"
	"fmt"

	"github.com/pmezard/go-difflib/difflib"
	"gomodules.xyz/jsonpatch/v2"
	"sigs.k8s.io/yaml"

	"github.com/kubediff/kubediff/pkg/record"
)

// jsonPatch returns the RFC 6902 patch that turns the old object into the
// new one (both already without ignored fields and with values redacted).
// Long strings in its values are cut as in the changes, so such a patch
// informs but does not apply (as with redacted values).
func jsonPatch(oldObj, newObj map[string]any) []record.PatchOperation {
	a, err1 := json.Marshal(oldObj)
	b, err2 := json.Marshal(newObj)
	if err1 != nil || err2 != nil {
		return nil
	}
	ops, err := jsonpatch.CreatePatch(a, b)
	if err != nil {
		return nil
	}
	out := make([]record.PatchOperation, len(ops))
	for i, op := range ops {
		value := op.Value
		if hasLong(value) {
			// Cut as the change's own values are, around the first
			// difference from what was there.
			value = bounded(value, valueAt(oldObj, op.Path))
		}
		out[i] = record.PatchOperation{Operation: op.Operation, Path: op.Path, Value: value}
	}
	return out
}

// unifiedDiff renders both objects as YAML and returns a unified diff with
// three lines of context around each change, as kubectl diff shows it,
// with long strings cut as in the changes.
func unifiedDiff(oldObj, newObj map[string]any, c record.Change) string {
	oldObj, newObj = boundedObjects(oldObj, newObj)
	a, err1 := yaml.Marshal(oldObj)
	b, err2 := yaml.Marshal(newObj)
	if err1 != nil || err2 != nil {
		return ""
	}
	name := c.ObjectName()
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A:        difflib.SplitLines(string(a)),
		B:        difflib.SplitLines(string(b)),
		FromFile: fmt.Sprintf("%s %s (old)", c.Kind, name),
		ToFile:   fmt.Sprintf("%s %s (new)", c.Kind, name),
		Context:  3,
	})
	if err != nil {
		return ""
	}
	return text
}

package record

import (
	"fmt"
	"strings"
)

// CondenseConditions is for people: it turns the changes of each status
// condition (status, reason, message, lastTransitionTime, each its own
// change in a record) into one change whose values read "True
// (MinimumReplicasAvailable)", and a condition list added whole into
// "Available=True (…), Progressing=True (…)". Other changes are kept as
// they are, in order. Text output and Slack show this; records carry
// every field.
func CondenseConditions(changes []FieldChange) []FieldChange {
	var out []FieldChange
	merged := map[string]int{} // condition pointer → index in out
	for _, fc := range changes {
		cond, field, ok := conditionField(fc.Path)
		switch {
		case fc.Path == "/status/conditions" && fc.Op != OpRemove:
			fc.From, fc.To = conditionList(fc.From), conditionList(fc.To)
			out = append(out, fc)
		case ok && field == "":
			fc.From, fc.To = conditionSummary(fc.From), conditionSummary(fc.To)
			out = append(out, fc)
		case ok:
			i, seen := merged[cond]
			if !seen {
				merged[cond] = len(out)
				out = append(out, FieldChange{Op: OpReplace, Path: cond, Field: strings.TrimSuffix(fc.Field, "."+field)})
				i = len(out) - 1
			}
			m := &out[i]
			switch field {
			case "status":
				m.From, m.To = prefixValue(fc.From, m.From), prefixValue(fc.To, m.To)
			case "reason":
				m.To = suffixValue(m.To, fc.To)
			}
		default:
			out = append(out, fc)
		}
	}
	return out
}

// conditionField splits /status/conditions/N/field into the condition's
// pointer and the field ("" for the condition itself).
func conditionField(path string) (cond, field string, ok bool) {
	rest, found := strings.CutPrefix(path, "/status/conditions/")
	if !found {
		return "", "", false
	}
	n, field, _ := strings.Cut(rest, "/")
	return "/status/conditions/" + n, field, true
}

// prefixValue puts a status before what a reason already wrote.
func prefixValue(status, current any) any {
	if current == nil {
		return fmt.Sprint(status)
	}
	return fmt.Sprint(status) + " " + fmt.Sprint(current)
}

// suffixValue adds "(reason)" after the status.
func suffixValue(current, reason any) any {
	if reason == nil || reason == "" {
		return current
	}
	if current == nil {
		return fmt.Sprintf("(%v)", reason)
	}
	return fmt.Sprintf("%v (%v)", current, reason)
}

func conditionSummary(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	return suffixValue(m["status"], m["reason"])
}

func conditionList(v any) any {
	list, ok := v.([]any)
	if !ok {
		return v
	}
	parts := make([]string, 0, len(list))
	for _, item := range list {
		m, _ := item.(map[string]any)
		parts = append(parts, fmt.Sprintf("%v=%v", m["type"], conditionSummary(m)))
	}
	return strings.Join(parts, ", ")
}

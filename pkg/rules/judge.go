package rules

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"

	"github.com/kubediff/kubediff/pkg/record"
)

// Input is what the rules see of one record: the record, and the
// object's states after and before it as kubediff caches them (redacted
// and pruned; nil when there is none: no object before an add, none
// after a deletion).
type Input struct {
	Record            *record.Change
	Object, OldObject map[string]any
}

// Verdict is what the rules say of a record.
type Verdict struct {
	// Rules are the names of the rules it matched, in the set's order.
	Rules []string
	// Severity is the highest of theirs, "" when none matched.
	Severity string
	// Summary is the summary of the most severe matched rule that has
	// one (the first of equals).
	Summary string
	// Drop is set when a matched rule drops the record.
	Drop bool
	// Failed are the rules whose evaluation failed, counted as not
	// matched.
	Failed []string
}

// Judge evaluates every rule on in. A rule whose evaluation fails (over
// the cost limit, or an error other than a field that is absent) counts
// as not matched; OnError hears of it once until the rule evaluates
// again.
func (s *Set) Judge(in Input) Verdict {
	var v Verdict
	if s.Len() == 0 {
		return v
	}
	var act *activation // made when a rule is evaluated
	best, summaryRank := 0, 0
	var data map[string]any // the summaries' data, made when one is needed
	for _, r := range s.rules {
		if !r.plan.prefilter.admits(in.Record) || !r.plan.objects.admits(&in) {
			continue
		}
		if act == nil {
			// Made of CEL values once for every rule, not by each rule that reads them.
			act = &activation{in: &in, change: in.Record, recordVal: &lazyRecord{c: in.Record, old: in.OldObject, new: in.Object},
				object: adapt(in.Object), oldObject: adapt(in.OldObject)}
		}
		out, err := r.plan.eval(act)
		if err != nil && !absent(err) {
			s.failed(r, err)
			v.Failed = append(v.Failed, r.Name)
			continue
		}
		s.evaluated(r)
		if out != types.True {
			continue
		}
		v.Rules = append(v.Rules, r.Name)
		v.Drop = v.Drop || r.Drop
		rank := record.SeverityRank(r.Severity)
		if rank > best {
			best, v.Severity = rank, r.Severity
		}
		if r.summary != nil && rank > summaryRank {
			if data == nil {
				data = summaryData(act)
			}
			if text, ok := s.summarize(r, in.Record, data); ok {
				v.Summary, summaryRank = text, rank
			}
		}
	}
	return v
}

// summarize renders r's summary. One over its limit gives a short
// fallback, so that the record still says which rule matched it; one
// that fails otherwise gives none. Either is told once.
func (s *Set) summarize(r *Rule, c *record.Change, data map[string]any) (string, bool) {
	text, err := r.summary.render(data)
	if err == nil {
		return text, true
	}
	if r.summaryTold.CompareAndSwap(false, true) && s.OnSummaryError != nil {
		s.OnSummaryError(r.Name, fmt.Errorf("summary: %w", err))
	}
	if !errors.Is(err, errSummaryLimit) {
		return "", false
	}
	object := c.Name
	if c.Namespace != "" {
		object = c.Namespace + "/" + c.Name
	}
	return fmt.Sprintf("%s %s: rule %s matched (its summary went over its limit)", c.Kind, object, r.Name), true
}

// summaryData is the record as a summary's template sees it: its fields
// as rules see them (.kind, .namespace, .changes), and .object and
// .oldObject.
func summaryData(act *activation) map[string]any {
	data := recordValue(act.change)
	data["object"] = mapOrNil(act.object.Value())
	data["oldObject"] = mapOrNil(act.oldObject.Value())
	return data
}

func mapOrNil(v any) any {
	if m, ok := v.(map[string]any); ok {
		return m
	}
	return nil
}

// absent says whether err is CEL saying that a field is not there (a
// key missing from a map, a field of a null object): the rule does not
// match this record, as a rule on Deployments does not match a ConfigMap.
// It is how an expression without has() reads, not a broken rule.
func absent(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "no such key") || strings.Contains(msg, "null_type")
}

func (s *Set) failed(r *Rule, err error) {
	if r.failing.CompareAndSwap(false, true) && s.OnError != nil {
		s.OnError(r.Name, err, false)
	}
}

func (s *Set) evaluated(r *Rule) {
	if r.failing.Load() && r.failing.CompareAndSwap(true, false) && s.OnError != nil {
		s.OnError(r.Name, nil, true)
	}
}

// failFlag is set while a rule fails.
type failFlag struct{ atomic.Bool }

// activation resolves the rules' three variables without a map.
type activation struct {
	in                *Input
	change            *record.Change // for summaries
	recordVal         ref.Val
	object, oldObject ref.Val
	// smallRecord and smallObject of both states: 0 unknown yet, 1
	// small, -1 not.
	recordSmall, objectsSmall int8
}

// small says whether the record is small (smallRecord), and with
// objects whether both objects are too (smallObject), each looked at
// once and only when a rule asks.
func (a *activation) small(objects bool) bool {
	if a.recordSmall == 0 {
		a.recordSmall = smallness(smallRecord(a.change))
	}
	if a.recordSmall < 0 || !objects {
		return a.recordSmall > 0
	}
	if a.objectsSmall == 0 {
		a.objectsSmall = smallness(smallObject(a.in.Object) && smallObject(a.in.OldObject))
	}
	return a.objectsSmall > 0
}

func smallness(small bool) int8 {
	if small {
		return 1
	}
	return -1
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "record":
		return a.recordVal, true
	case "object":
		return a.object, true
	case "oldObject":
		return a.oldObject, true
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

func adapt(m map[string]any) ref.Val {
	if m == nil {
		return types.NullValue
	}
	return types.DefaultTypeAdapter.NativeToValue(m)
}

// recordValue is the record as a summary's template sees it, as rules
// see it (celRecord): a field that is unknown (no user, no manager) is
// left out.
func recordValue(c *record.Change) map[string]any {
	v := map[string]any{
		"type": c.Type, "apiVersion": c.APIVersion, "kind": c.Kind, "resource": c.Resource,
		"namespace": c.Namespace, "name": c.Name, "uid": c.UID, "resourceVersion": c.ResourceVersion,
		"afterGap": c.AfterGap, "namespaceDeleting": c.NamespaceDeleting, "changed": c.Changed, "changes": changesValue(c.Changes),
		"access": stringsOrEmpty(c.Access),
	}
	labels := c.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	v["labels"] = labels
	if o := c.Owner; o != nil {
		v["owner"] = map[string]any{"kind": o.Kind, "name": o.Name}
	}
	if m := c.Manager; m != nil {
		v["manager"] = map[string]any{"name": m.Name, "operation": m.Operation, "subresource": m.Subresource, "time": m.Time}
	}
	if u := c.User; u != nil {
		user := map[string]any{"name": u.Name, "groups": stringsOrEmpty(u.Groups)}
		if sa := u.ServiceAccount; sa != nil {
			user["serviceAccount"] = map[string]any{"namespace": sa.Namespace, "name": sa.Name}
		}
		v["user"] = user
	}
	if r := c.Release; r != nil {
		v["release"] = releaseValue(r)
	}
	if g := c.GitOps; g != nil {
		v["gitops"] = gitopsValue(g)
	}
	if cl := c.Cluster; cl != nil {
		v["cluster"] = map[string]any{"name": cl.Name, "id": cl.ID}
	}
	return v
}

func changesValue(changes []record.FieldChange) []any {
	out := make([]any, len(changes))
	for i, fc := range changes {
		// from is null for an add, to for a remove.
		out[i] = map[string]any{"op": fc.Op, "path": fc.Path, "field": fc.Field, "from": fc.From, "to": fc.To}
	}
	return out
}

func stringsOrEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

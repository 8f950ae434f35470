package rules

import (
	"slices"
	"testing"

	"github.com/google/cel-go/common/types"

	"github.com/kubediff/kubediff/pkg/record"
)

// The prefilter skips a rule only where the rule says false: on every
// record, the verdict with it is the verdict of evaluating every rule.
func TestThePrefilterSkipsOnlyRulesThatWouldNotMatch(t *testing.T) {
	set, err := Compile([]Spec{
		{Name: "kind", When: `record.kind == "Deployment" && record.changes.exists(c, c.path == "/spec/replicas")`},
		{Name: "kind-reversed", When: `"ConfigMap" == record.kind`},
		{Name: "kinds", When: `record.kind in ["Secret", "ConfigMap"] && record.type != "added"`},
		{Name: "prefix", When: `record.namespace.startsWith("prod-") && record.name.endsWith("-db")`},
		{Name: "contains", When: `record.changed.contains("image")`},
		{Name: "regex", When: `record.namespace.matches("^prod-[a-z]+$")`},
		{Name: "label", When: `record.labels["team"] == "shop"`},
		{Name: "user", When: `has(record.user) && record.user.name == "alice"`},
		{Name: "manager", When: `has(record.manager)`},
		{Name: "or", When: `record.kind == "Pod" || record.kind == "ConfigMap"`},
		{Name: "negated", When: `!(record.kind == "ConfigMap")`},
		{Name: "label-removed", When: `record.changes.exists(c, c.op == "remove" && c.path.startsWith("/metadata/labels/"))`},
		{Name: "to-zero", When: `record.changes.exists(c, c.path == "/spec/replicas" && c.to == 0)`},
		{Name: "image-or-x", When: `record.changes.exists(c, c.field.endsWith(".image") || "/x" == c.path)`},
		{Name: "value-or-x", When: `record.changes.exists(c, c.to == 2 || c.path == "/x")`},
		{Name: "not-replicas", When: `!record.changes.exists(c, c.path == "/spec/replicas")`},
		{Name: "fields-in", When: `record.changes.exists(c, c.field in ["data.k", "spec.replicas"] && c.field.matches("^(data|spec)"))`},
		{Name: "many", When: `record.changes.size() > 1`},
		{Name: "some", When: `size(record.changes) >= 1`},
		{Name: "by-kubectl", When: `record.manager.name == "kubectl"`},
		{Name: "by-alice", When: `record.user.name in ["alice", "carol"]`},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	records := []*record.Change{
		{Type: record.Updated, Kind: "Deployment", Namespace: "prod-eu", Name: "shop-db", Changed: "spec.replicas",
			Changes: []record.FieldChange{{Op: record.OpReplace, Path: "/spec/replicas", Field: "spec.replicas", From: int64(1), To: int64(2)}},
			Labels:  map[string]string{"team": "shop"}, User: &record.User{Name: "alice"}},
		{Type: record.Added, Kind: "ConfigMap", Namespace: "prod-2", Name: "x", Manager: &record.Manager{Name: "kubectl"}},
		{Type: record.Deleted, Kind: "Secret", Namespace: "dev", Name: "y-db", Changed: "data.image", Labels: map[string]string{"team": "web"},
			User: &record.User{Name: "bob"}},
		{Type: record.Updated, Kind: "Pod", Name: "z"},
		{Type: record.Updated, Kind: "Deployment", Namespace: "dev", Name: "web", Changes: []record.FieldChange{
			{Op: record.OpRemove, Path: "/metadata/labels/team", Field: "metadata.labels.team", From: "shop"},
			{Op: record.OpReplace, Path: "/spec/replicas", Field: "spec.replicas", From: int64(3), To: int64(0)},
			{Op: record.OpReplace, Path: "/spec/template/spec/containers/0/image", Field: "spec.template.spec.containers[name=web].image", From: "a", To: "b"}}},
		{Type: record.Updated, Kind: "ConfigMap", Namespace: "dev", Name: "cm", Manager: &record.Manager{Name: "kubectl"}, Changes: []record.FieldChange{
			{Op: record.OpReplace, Path: "/data/k", Field: "data.k", From: "1", To: int64(2)}}},
	}
	for _, c := range records {
		got := set.Judge(Input{Record: c}).Rules
		var want []string
		act := &activation{in: &Input{Record: c}, change: c, recordVal: celRecord(c, nil, nil), object: types.NullValue, oldObject: types.NullValue}
		for _, r := range set.rules {
			if out, err := r.plan.eval(act); err == nil && out == types.True {
				want = append(want, r.Name)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s %s/%s: rules %v with the prefilter, %v without", c.Kind, c.Namespace, c.Name, got, want)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s %s/%s: rules %v with the prefilter, %v without", c.Kind, c.Namespace, c.Name, got, want)
				break
			}
		}
	}
	skipped := 0
	for _, r := range set.rules {
		skipped += len(r.plan.prefilter)
	}
	if skipped < 17 {
		t.Errorf("the rules have %d prefilter requirements, want at least 17: the test proves little", skipped)
	}
	for _, r := range set.rules {
		if want := r.Name == "value-or-x" || r.Name == "not-replicas" || r.Name == "negated" || r.Name == "or"; want != (len(r.plan.prefilter) == 0) {
			t.Errorf("%s: %d prefilter requirements", r.Name, len(r.plan.prefilter))
		}
	}
}

// The objects' filter skips a rule only where the rule says false, on
// objects with and without the keys, null values, lists, and no object.
func TestTheObjectFilterSkipsOnlyRulesThatWouldNotMatch(t *testing.T) {
	set, err := Compile([]Spec{
		{Name: "has", When: `has(object.data.mode) && object.data.mode == "unsafe"`},
		{Name: "in-map", When: `record.kind == "ConfigMap" && "mode" in object.data`},
		{Name: "in-list", When: `"keep" in object.metadata.finalizers`},
		{Name: "old", When: `has(oldObject.spec.replicas)`},
		{Name: "null", When: `has(object.spec.replicas) && object.spec.replicas == null`},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	inputs := []Input{
		{Object: map[string]any{"data": map[string]any{"mode": "unsafe"}}},
		{Object: map[string]any{"data": map[string]any{"k": "v"}}},
		{Object: map[string]any{"data": nil}},
		{Object: map[string]any{"metadata": map[string]any{"finalizers": []any{"keep", "other"}}}},
		{Object: map[string]any{"metadata": map[string]any{"finalizers": []any{"other"}}}},
		{Object: map[string]any{"spec": map[string]any{"replicas": nil}}, OldObject: map[string]any{"spec": map[string]any{"replicas": int64(2)}}},
		{OldObject: map[string]any{"spec": map[string]any{}}},
		{},
	}
	matched := 0
	for i, in := range inputs {
		in.Record = &record.Change{Type: record.Updated, Kind: "ConfigMap"}
		got := set.Judge(in).Rules
		var want []string
		act := &activation{in: &in, change: in.Record, recordVal: celRecord(in.Record, nil, nil), object: adapt(in.Object), oldObject: adapt(in.OldObject)}
		for _, r := range set.rules {
			if out, err := r.plan.eval(act); err == nil && out == types.True {
				want = append(want, r.Name)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("input %d: rules %v with the filter, %v without", i, got, want)
		}
		matched += len(want)
	}
	filters := 0
	for _, r := range set.rules {
		filters += len(r.plan.objects)
	}
	if matched < 5 || filters != 5 {
		t.Errorf("%d matches, %d object filters: the test proves little", matched, filters)
	}
}

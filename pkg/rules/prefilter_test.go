package rules

import (
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
	}
	for _, c := range records {
		got := set.Judge(Input{Record: c}).Rules
		var want []string
		act := &activation{change: c, recordVal: celRecord(c, nil, nil), object: types.NullValue, oldObject: types.NullValue}
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
	if skipped < 9 {
		t.Errorf("the rules have %d prefilter requirements, want at least 9: the test proves little", skipped)
	}
}

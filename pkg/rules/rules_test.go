package rules

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/diff"
	"github.com/kubediff/kubediff/pkg/record"
)

func TestCompileRefusesABrokenRuleNamingItOnOneLine(t *testing.T) {
	cases := []struct {
		name string
		spec Spec
		want string
	}{
		{"a misspelt field of record", Spec{Name: "typo", When: `record.namspace == "prod"`},
			"rules[typo].when: 1:7: undefined field 'namspace'"},
		{"an expression that is not true or false", Spec{Name: "text", When: `record.namespace + "x"`},
			"rules[text].when: is of type string, not bool"},
		{"a syntax error", Spec{Name: "syntax", When: `record.type == `},
			"rules[syntax].when: 1:"},
		{"an expression that costs more than the limit whatever the record", Spec{Name: "costly",
			When: `lists.range(1000).map(a, lists.range(1000).map(b, a + b)).size() > 0`},
			"rules[costly].when: costs at least"},
		{"an unknown severity", Spec{Name: "sev", When: `true`, Severity: "urgent"},
			`rules[sev].severity: "urgent" is not one of info, warning, critical`},
		{"a summary that is not a template", Spec{Name: "sum", When: `true`, Summary: "{{ .kind "},
			"rules[sum].summary: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile([]Spec{{Name: "fine", When: `record.kind == "Pod"`}, tc.spec}, nil)
			if err == nil {
				t.Fatal("compiled")
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q, want one line containing %q", msg, tc.want)
			}
		})
	}
}

func TestCompileNamesAnUnknownPackRule(t *testing.T) {
	_, err := Compile(nil, PackNamed("image-changed", "no-such-rule"))
	if err == nil || !strings.Contains(err.Error(), `rulePack: "no-such-rule" is not a built-in rule`) {
		t.Fatalf("error %v", err)
	}
	set, err := Compile([]Spec{{Name: "mine", When: "true"}}, PackNamed("workload-deleted"))
	if err != nil {
		t.Fatal(err)
	}
	if got := set.Names(); !slices.Equal(got, []string{"mine", "workload-deleted"}) {
		t.Errorf("names %v", got)
	}
}

var deployments = schemaResource("apps", "v1", "deployments", "Deployment")

func schemaResource(group, version, resource, kind string) change.Resource {
	return change.Resource{GVR: schema.GroupVersionResource{Group: group, Version: version, Resource: resource}, Kind: kind, Namespaced: true}
}

// deploymentYAML is a Deployment as the API server returns it, with the
// fields that kubediff's cache prunes.
const deploymentYAML = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: %s
  uid: 5b1c1e9e-1f7a-4a43-9c55-1f0b8f3b1a01
  resourceVersion: "%s"
  generation: 3
  labels: {app: web, team: shop}
  annotations: {deployment.kubernetes.io/revision: "3"}
  managedFields:
  - manager: kubectl-client-side-apply
    operation: Update
    apiVersion: apps/v1
    time: "2026-11-25T10:00:00Z"
    fieldsType: FieldsV1
    fieldsV1: {f:spec: {f:replicas: {}, f:template: {f:spec: {f:containers: {'k:{"name":"web"}': {f:image: {}}}}}}}
spec:
  replicas: %d
  selector: {matchLabels: {app: web}}
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 25%%, maxUnavailable: 25%%}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: %s
        ports: [{containerPort: 8080, protocol: TCP}]
        resources: {limits: {memory: 256Mi}, requests: {cpu: 100m, memory: 128Mi}}
      - name: sidecar
        image: envoyproxy/envoy:v1.31.0
status:
  observedGeneration: 3
  replicas: 3
  readyReplicas: 3
`

func deployment(t *testing.T, ns, rv string, replicas int, image string) *unstructured.Unstructured {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal(fmt.Appendf(nil, deploymentYAML, ns, rv, replicas, image), &obj); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// judged diffs ev with kubediff's differ, as the pipeline does, with
// both objects cached first (pruned, redacted), and has set judge the
// record.
func judged(t *testing.T, set *Set, ev change.Event) (record.Change, Verdict) {
	t.Helper()
	return judgedAs(t, set, ev, func(*record.Change) {})
}

// judgedAs is judged with the record given what the pipeline adds to
// it before the rules see it (its user, namespaceDeleting).
func judgedAs(t *testing.T, set *Set, ev change.Event, add func(*record.Change)) (record.Change, Verdict) {
	t.Helper()
	d, err := diff.New(diff.Options{Rules: diff.Rules{Defaults: diff.AllDefaults}})
	if err != nil {
		t.Fatal(err)
	}
	cacheIt := d.CacheTransform(ev.Resource)
	in := Input{}
	for _, u := range []**unstructured.Unstructured{&ev.Old, &ev.New} {
		if *u == nil {
			continue
		}
		cached, err := cacheIt(*u)
		if err != nil {
			t.Fatal(err)
		}
		*u = cached.(*unstructured.Unstructured)
	}
	c, ok := d.Diff(ev)
	if !ok {
		t.Fatal("the differ made no record")
	}
	add(&c)
	in.Record = &c
	if ev.New != nil {
		in.Object = ev.New.Object
	}
	if ev.Old != nil {
		in.OldObject = ev.Old.Object
	}
	return c, set.Judge(in)
}

func TestJudgeNamesTheRulesARecordMatches(t *testing.T) {
	set, err := Compile([]Spec{
		{Name: "image-changed-in-prod", Severity: Warning,
			When:    `record.namespace.startsWith("prod-") && record.changes.exists(c, c.field.endsWith(".image"))`,
			Summary: `{{ .kind }} {{ .namespace }}/{{ .name }}: image now {{ index .object.spec.template.spec.containers 0 "image" }}`},
		{Name: "shop-team", When: `record.labels["team"] == "shop"`},
		{Name: "big-memory", Severity: Critical,
			When: `object.spec.template.spec.containers.exists(c, has(c.resources.limits.memory) && quantity(c.resources.limits.memory).isGreaterThan(quantity("1Gi")))`},
		{Name: "by-kubectl", When: `has(record.manager) && record.manager.name.startsWith("kubectl")`},
		{Name: "scaled-down", When: `object.spec.replicas < oldObject.spec.replicas`},
	}, PackNamed("image-changed"))
	if err != nil {
		t.Fatal(err)
	}
	ev := change.Event{Type: change.Updated, Resource: deployments,
		Old: deployment(t, "prod-eu", "10", 3, "shop/web:1.4.1"), New: deployment(t, "prod-eu", "11", 3, "shop/web:1.5.0")}
	c, v := judged(t, set, ev)
	want := []string{"image-changed-in-prod", "shop-team", "by-kubectl", "image-changed"}
	if !slices.Equal(v.Rules, want) || v.Severity != Warning || v.Drop {
		t.Fatalf("verdict %+v on %s, want rules %v, severity warning", v, c.Changed, want)
	}
	if v.Summary != "Deployment prod-eu/web: image now shop/web:1.5.0" {
		t.Errorf("summary %q", v.Summary)
	}

	ev = change.Event{Type: change.Updated, Resource: deployments,
		Old: deployment(t, "staging", "10", 3, "shop/web:1.4.1"), New: deployment(t, "staging", "11", 0, "shop/web:1.4.1")}
	_, v = judged(t, set, ev)
	if !slices.Equal(v.Rules, []string{"shop-team", "by-kubectl", "scaled-down"}) || v.Severity != Info {
		t.Errorf("scaled to zero in staging: verdict %+v", v)
	}
}

func TestPackRulesOnARealDeployment(t *testing.T) {
	set, err := Compile(nil, PackNamed("image-changed", "replicas-to-zero", "workload-deleted"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name        string
		ev          change.Event
		rules       []string
		severity    string
		summaryPart string
	}{
		{"an image changed", change.Event{Type: change.Updated, Resource: deployments,
			Old: deployment(t, "shop", "1", 3, "shop/web:1.4.1"), New: deployment(t, "shop", "2", 3, "shop/web:1.5.0")},
			[]string{"image-changed"}, Info, "image shop/web:1.4.1 → shop/web:1.5.0"},
		{"scaled to zero", change.Event{Type: change.Updated, Resource: deployments,
			Old: deployment(t, "shop", "1", 3, "shop/web:1.4.1"), New: deployment(t, "shop", "2", 0, "shop/web:1.4.1")},
			[]string{"replicas-to-zero"}, Warning, "Deployment shop/web scaled to zero"},
		{"scaled up from zero", change.Event{Type: change.Updated, Resource: deployments,
			Old: deployment(t, "shop", "1", 0, "shop/web:1.4.1"), New: deployment(t, "shop", "2", 2, "shop/web:1.4.1")},
			nil, "", ""},
		{"deleted", change.Event{Type: change.Deleted, Resource: deployments, Old: deployment(t, "shop", "1", 3, "shop/web:1.4.1")},
			[]string{"workload-deleted"}, Warning, "Deployment shop/web deleted"},
		{"a ConfigMap deleted", change.Event{Type: change.Deleted, Resource: schemaResource("", "v1", "configmaps", "ConfigMap"),
			Old: &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "app", "namespace": "shop", "uid": "u1", "resourceVersion": "4"}, "data": map[string]any{"k": "v"}}}},
			nil, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, v := judged(t, set, tc.ev)
			if !slices.Equal(v.Rules, tc.rules) || v.Severity != tc.severity || !strings.Contains(v.Summary, tc.summaryPart) {
				t.Errorf("verdict %+v, want rules %v severity %q summary with %q", v, tc.rules, tc.severity, tc.summaryPart)
			}
		})
	}
}

func TestARuleOverTheCostLimitDoesNotMatchAndIsToldOncePerEpisode(t *testing.T) {
	set, err := Compile([]Spec{{Name: "every-pair-of-keys",
		When: `has(object.data) && object.data.all(a, object.data.all(b, a == b || a != b))`}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var told []string
	set.OnError = func(rule string, err error, healed bool) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, fmt.Sprintf("%s healed=%v err=%v", rule, healed, err))
	}
	bigData := map[string]any{}
	for i := range 700 {
		bigData[fmt.Sprintf("key-%04d", i)] = "v"
	}
	big := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": bigData}
	small := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"a": "1", "b": "2"}}
	rec := &record.Change{Type: record.Updated, Kind: "ConfigMap", APIVersion: "v1"}
	for range 3 {
		if v := set.Judge(Input{Record: rec, Object: big}); len(v.Rules) != 0 {
			t.Fatalf("matched over the cost limit: %+v", v)
		}
	}
	if v := set.Judge(Input{Record: rec, Object: small}); !slices.Equal(v.Rules, []string{"every-pair-of-keys"}) {
		t.Fatalf("small object: %+v", v)
	}
	set.Judge(Input{Record: rec, Object: big})
	if len(told) != 3 || !strings.Contains(told[0], "healed=false") || !strings.Contains(told[0], "cost limit") ||
		!strings.Contains(told[1], "healed=true") || !strings.Contains(told[2], "healed=false") {
		t.Errorf("told %q, want one failure, one healing, one failure", told)
	}
}

func TestAFieldAbsentFromAnObjectIsNotAFailure(t *testing.T) {
	set, err := Compile([]Spec{{Name: "zero", When: `object.spec.replicas == 0`}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	set.OnError = func(rule string, err error, _ bool) { t.Errorf("told of %s: %v", rule, err) }
	rec := &record.Change{Type: record.Deleted, Kind: "ConfigMap"}
	set.Judge(Input{Record: rec, OldObject: map[string]any{"data": map[string]any{}}}) // object is null
	set.Judge(Input{Record: rec, Object: map[string]any{"data": map[string]any{}}})    // no spec
}

// Every field of the record reads as docs/rules.md says, present or
// absent.
func TestEveryRecordFieldReadsAsDocumented(t *testing.T) {
	full := &record.Change{Type: record.Updated, APIVersion: "apps/v1", Kind: "Deployment", Resource: "deployments", Namespace: "shop", Name: "web",
		UID: "u1", ResourceVersion: "7", AfterGap: true, Labels: map[string]string{"team": "shop"}, Owner: &record.Owner{Kind: "Rollout", Name: "web"},
		Changed: "spec.replicas", Changes: []record.FieldChange{{Op: record.OpReplace, Path: "/spec/replicas", Field: "spec.replicas", From: int64(3), To: int64(0)},
			{Op: record.OpAdd, Path: "/metadata/labels/x", Field: "metadata.labels.x", To: "y"}},
		Manager: &record.Manager{Name: "kubectl", Operation: "Update", Subresource: "scale", Time: "2026-11-25T10:00:00Z"},
		User: &record.User{Name: "system:serviceaccount:ci:deployer", Groups: []string{"system:serviceaccounts"},
			ServiceAccount: &record.ServiceAccount{Namespace: "ci", Name: "deployer"}},
		Cluster: &record.Cluster{Name: "prod", ID: "c1"},
		Release: &record.Release{Tool: "helm", Namespace: "shop", Name: "web", Revision: 7, Status: "pending-upgrade", Chart: "web-1.4.2", AppVersion: "2.0"}}
	bare := &record.Change{Type: record.Added, APIVersion: "v1", Kind: "ConfigMap", Resource: "configmaps", Name: "cm"}
	for _, tc := range []struct {
		when       string
		full, bare bool
	}{
		{`record.type == "updated" && record.apiVersion == "apps/v1" && record.kind == "Deployment" && record.resource == "deployments"`, true, false},
		{`record.namespace == "shop" && record.name == "web" && record.uid == "u1" && record.resourceVersion == "7" && record.afterGap`, true, false},
		{`record.labels["team"] == "shop"`, true, false},
		{`record.labels.size() == 0`, false, true},
		{`has(record.owner) && record.owner.kind == "Rollout" && record.owner.name == "web"`, true, false},
		{`record.changed == "spec.replicas" && record.changes.size() == 2`, true, false},
		{`record.changes.exists(c, c.op == "replace" && c.from == 3 && c.to == 0) && record.changes.exists(c, c.from == null && c.to == "y")`, true, false},
		{`has(record.manager) && record.manager.name == "kubectl" && record.manager.operation == "Update" && record.manager.subresource == "scale" && record.manager.time.startsWith("2026")`, true, false},
		{`has(record.user) && record.user.name.endsWith("deployer") && "system:serviceaccounts" in record.user.groups && record.user.serviceAccount.namespace == "ci"`, true, false},
		{`has(record.cluster) && record.cluster.name == "prod" && record.cluster.id == "c1"`, true, false},
		{`has(record.release) && record.release.tool == "helm" && record.release.name == "web" && record.release.revision == 7 && record.release.chart == "web-1.4.2" && record.release.gitRevision == ""`, true, false},
		{`!has(record.user) && !has(record.manager) && !has(record.owner) && !has(record.cluster) && !has(record.release)`, false, true},
	} {
		set, err := Compile([]Spec{{Name: "r", When: tc.when}}, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.when, err)
		}
		for _, c := range []struct {
			rec  *record.Change
			want bool
		}{{full, tc.full}, {bare, tc.bare}} {
			if got := len(set.Judge(Input{Record: c.rec}).Rules) == 1; got != c.want {
				t.Errorf("%s on %s: %v, want %v", tc.when, c.rec.Kind, got, c.want)
			}
		}
	}
}

// A rule tests the record's release, and its summary names it.
func TestARuleReadsTheRelease(t *testing.T) {
	set, err := Compile([]Spec{{Name: "helm-release", When: `has(record.release) && record.release.tool == "helm"`,
		Summary: `release {{ .release.name }} rev {{ .release.revision }} ({{ .release.chart }}) changed {{ .kind }} {{ .name }}`}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &record.Change{Type: record.Updated, Kind: "Deployment", Name: "web",
		Release: &record.Release{Tool: "helm", Name: "web", Revision: 7, Chart: "web-1.4.2"}}
	if v := set.Judge(Input{Record: c}); len(v.Rules) != 1 || v.Summary != "release web rev 7 (web-1.4.2) changed Deployment web" {
		t.Errorf("a Helm release's record: %+v", v)
	}
	c.Release = nil
	if v := set.Judge(Input{Record: c}); len(v.Rules) != 0 {
		t.Errorf("a record of no release matched: %+v", v)
	}
}

// A rule that reads the objects runs without CEL's cost tracking when
// the record and both objects are small (its worst case on small values
// is within the limit), and tracked, stopped at the limit, when an
// object has a string too long to say so.
func TestARuleOnSmallObjectsRunsUntrackedAndALongStringIsStillBounded(t *testing.T) {
	set, err := Compile([]Spec{{Name: "unsafe-value",
		When: `has(object.data) && object.data.exists(k, object.data[k].contains("unsafe-mode"))`}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if set.rules[0].plan.small == nil || !set.rules[0].plan.readsObjects {
		t.Fatal("no untracked plan for small objects")
	}
	var told []string
	set.OnError = func(rule string, err error, healed bool) { told = append(told, fmt.Sprint(err)) }
	rec := &record.Change{Type: record.Updated, Kind: "ConfigMap", APIVersion: "v1"}
	small := map[string]any{"data": map[string]any{"a": "x", "b": "unsafe-mode=on"}}
	if v := set.Judge(Input{Record: rec, Object: small, OldObject: small}); !slices.Equal(v.Rules, []string{"unsafe-value"}) {
		t.Fatalf("small object: %+v", v)
	}
	// A value of unknown type is estimated as small at 1 KiB: an object
	// with a longer string is not small, whatever its size.
	for _, c := range []struct {
		value string
		small bool
	}{{strings.Repeat("a", 1<<10), true}, {strings.Repeat("a", 1<<10+1), false}} {
		act := &activation{in: &Input{Record: rec, Object: map[string]any{"data": map[string]any{"a": c.value}}}, change: rec}
		if got := act.small(true); got != c.small {
			t.Errorf("a %d-byte value: small %v, want %v", len(c.value), got, c.small)
		}
	}
	// Six values of 2 MiB without the needle: each one's contains costs a
	// fifth of the limit, and all six are read whatever the map's order.
	long := strings.Repeat("a", 2<<20)
	big := map[string]any{"data": map[string]any{"a": long, "b": long, "c": long, "d": long, "e": long, "f": long}}
	if v := set.Judge(Input{Record: rec, Object: big, OldObject: small}); len(v.Rules) != 0 || len(told) != 1 || !strings.Contains(told[0], "cost limit") {
		t.Fatalf("long strings: verdict %+v, told %q; want the cost limit", v, told)
	}
}

// Every field of the record a rule can read counts toward its being
// small: a drifted value or an access sentence too long makes it not.
func TestEveryRecordFieldCountsTowardSmall(t *testing.T) {
	base := func() *record.Change {
		return &record.Change{Type: record.Updated, Kind: "Deployment", Name: "web", Access: []string{"may get pods"},
			GitOps: &record.GitOps{Via: "argocd", Name: "shop", Drift: []record.DriftedField{{Path: "/spec/replicas", Declared: int64(3), Now: int64(0)}}},
			Owner:  &record.Owner{Kind: "Rollout", Name: "web"}, Cluster: &record.Cluster{Name: "prod"}}
	}
	if !smallRecord(base()) {
		t.Fatal("a small record is not small")
	}
	for name, grow := range map[string]func(c *record.Change){
		"a drifted value of 2 KiB":    func(c *record.Change) { c.GitOps.Drift[0].Now = strings.Repeat("x", 2<<10) },
		"300 drifted fields":          func(c *record.Change) { c.GitOps.Drift = make([]record.DriftedField, 300) },
		"an access sentence of 9 KiB": func(c *record.Change) { c.Access = []string{strings.Repeat("x", 9<<10)} },
		"an owner named with 9 KiB":   func(c *record.Change) { c.Owner.Name = strings.Repeat("x", 9<<10) },
		"a change's value of 2 KiB":   func(c *record.Change) { c.Changes = []record.FieldChange{{To: strings.Repeat("x", 2<<10)}} },
	} {
		c := base()
		grow(c)
		if smallRecord(c) {
			t.Errorf("%s: small", name)
		}
	}
}

package drift

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/diff"
	"github.com/kubediff/kubediff/pkg/record"
)

var deployments = change.Resource{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: "Deployment", Namespaced: true}

// Field sets (fieldsV1) as the watch keeps them: three levels deep
// (pkg/managedfields), so a container's fields read as "spec.template.spec".
var (
	argoTracking  = map[string]any{"f:metadata": map[string]any{"f:annotations": map[string]any{"f:argocd.argoproj.io/tracking-id": map[string]any{}}}}
	ownsReplicas  = map[string]any{"f:spec": map[string]any{"f:replicas": map[string]any{}, "f:template": map[string]any{"f:spec": map[string]any{}}}}
	ownsTemplate  = map[string]any{"f:spec": map[string]any{"f:template": map[string]any{"f:spec": map[string]any{}}}}
	ownsLabel     = map[string]any{"f:metadata": map[string]any{"f:labels": map[string]any{"f:team": map[string]any{}}}}
	ownsEverthing = merge(argoTracking, ownsReplicas)
)

func merge(sets ...map[string]any) map[string]any {
	out := map[string]any{}
	for _, s := range sets {
		for k, v := range s {
			if old, ok := out[k].(map[string]any); ok {
				out[k] = merge(old, v.(map[string]any))
				continue
			}
			out[k] = v
		}
	}
	return out
}

// entry is a managedFields entry, slim.
func entry(manager, subresource string, set map[string]any) any {
	e := map[string]any{"manager": manager, "operation": "Update", "fieldsV1": set}
	if subresource != "" {
		e["subresource"] = subresource
	}
	return e
}

// step is one write of Deployment shop/web: who made it (as the diff
// attributes it: pkg/diff's tests prove attribution), what it changed,
// and the managedFields it left.
type step struct {
	manager, subresource string
	change               func(spec map[string]any, meta map[string]any)
	entries              []any
}

func scale(n int64) func(spec, _ map[string]any) {
	return func(spec, _ map[string]any) { spec["replicas"] = n }
}

func image(img string) func(spec, _ map[string]any) {
	return func(spec, _ map[string]any) { container(spec)["image"] = img }
}

func setEnv(name, value string) func(spec, _ map[string]any) {
	return func(spec, _ map[string]any) {
		container(spec)["env"] = []any{map[string]any{"name": name, "value": value}}
	}
}

func label(k, v string) func(_, meta map[string]any) {
	return func(_, meta map[string]any) {
		labels, _ := meta["labels"].(map[string]any)
		if labels == nil {
			labels = map[string]any{}
			meta["labels"] = labels
		}
		labels[k] = v
	}
}

func both(fs ...func(spec, meta map[string]any)) func(spec, meta map[string]any) {
	return func(spec, meta map[string]any) {
		for _, f := range fs {
			f(spec, meta)
		}
	}
}

func container(spec map[string]any) map[string]any {
	return spec["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
}

const argoMarks = `{"annotations":{"argocd.argoproj.io/tracking-id":"shop:apps/Deployment:shop/web"}}`

// run plays steps on a Deployment whose metadata starts as meta (JSON)
// and returns each record's fact, summarized.
func run(t *testing.T, meta string, steps []step) ([]string, *bytes.Buffer) {
	t.Helper()
	return runWith(t, meta, steps, nil)
}

// runWith is run with Argo CD's ignoreDifferences.
func runWith(t *testing.T, meta string, steps []step, ignores *Ignores) ([]string, *bytes.Buffer) {
	t.Helper()
	recs, logs := play(t, meta, steps, ignores, nil)
	got := make([]string, len(recs))
	for i, rec := range recs {
		got[i] = summary(rec.GitOps)
	}
	return got, logs
}

// play plays steps as runWith does and returns the records, each with
// its GitOps fact; transitions (nil: none) is told of drift opening and
// ending.
func play(t *testing.T, meta string, steps []step, ignores *Ignores, transitions func(Transition)) ([]record.Change, *bytes.Buffer) {
	t.Helper()
	d, err := diff.New(diff.Options{Rules: diff.Rules{Defaults: diff.AllDefaults}})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	book := NewAppliedBook()
	cls := New(slog.New(slog.NewTextHandler(&logs, nil)), book, ignores)
	if transitions != nil {
		cls.OnTransition(transitions)
	}
	redact := redacting(t, d, deployments)
	var m map[string]any
	if err := json.Unmarshal([]byte(meta), &m); err != nil {
		t.Fatal(err)
	}
	m["name"], m["namespace"], m["uid"] = "web", "shop", "u1"
	var old *unstructured.Unstructured
	start := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	var got []record.Change
	for i, s := range steps {
		obj := deploymentAt(old, m, i+1)
		if s.change != nil {
			s.change(obj.Object["spec"].(map[string]any), obj.Object["metadata"].(map[string]any))
		}
		obj.Object["metadata"].(map[string]any)["managedFields"] = s.entries
		ev := change.Event{Type: change.Updated, Resource: deployments, Old: old, New: obj}
		if old == nil {
			ev.Type = change.Added
		}
		book.Observe(obj, redact) // as the cache transform does
		rec, _ := d.Diff(ev)
		rec.Manager = &record.Manager{Name: s.manager, Subresource: s.subresource}
		if s.manager == "" {
			rec.Manager = nil
		}
		rec.Time = record.Timestamp(start.Add(time.Duration(i) * 2500 * time.Millisecond))
		cls.Classify(old, obj, &rec)
		got = append(got, rec)
		old = obj
	}
	return got, &logs
}

// deploymentAt is a copy of old (or a new Deployment) at resourceVersion rv.
func deploymentAt(old *unstructured.Unstructured, meta map[string]any, rv int) *unstructured.Unstructured {
	var obj *unstructured.Unstructured
	if old != nil {
		obj = old.DeepCopy()
	} else {
		b, _ := json.Marshal(map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
			"spec": map[string]any{"replicas": 2, "template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "nginx:1.27"}}}}}})
		obj = &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(b); err != nil {
			panic(err)
		}
	}
	obj.SetResourceVersion(strconv.Itoa(rv))
	return obj
}

func summary(g *record.GitOps) string {
	if g == nil {
		return "-"
	}
	s := g.String()
	if g.DeclaredFrom != "" {
		s += " [" + g.DeclaredFrom + "]"
	}
	for _, f := range g.Drift {
		s += "; " + f.Text(func(v any) string { b, _ := json.Marshal(v); return string(b) })
	}
	return s
}

func TestClassify(t *testing.T) {
	argo := []any{entry("argocd-controller", "", ownsEverthing)}
	argoAfterScale := []any{entry("argocd-controller", "", merge(argoTracking, ownsTemplate)), entry("kubectl-edit", "", map[string]any{"f:spec": map[string]any{"f:replicas": map[string]any{}}})}
	argoAndEnv := []any{entry("argocd-controller", "", ownsEverthing), entry("kubectl-set", "", ownsTemplate)}
	for _, tc := range []struct {
		name  string
		meta  string
		steps []step
		want  []string
	}{{
		name: "scaled by hand, then put back by Argo CD",
		meta: argoMarks,
		steps: []step{
			{manager: "argocd-controller", entries: argo},
			{manager: "kubectl-edit", change: scale(5), entries: argoAfterScale},
			{manager: "argocd-controller", change: scale(2), entries: argo},
		},
		want: []string{"sync by Argo CD app shop",
			"outside Argo CD app shop [sync]; spec.replicas: declared 2, was 2, now 5",
			"sync by Argo CD app shop, put back after 2.5s (u1/2/updated)"},
	}, {
		name: "an env var added by hand is drift Argo CD's server-side apply leaves in place",
		meta: argoMarks,
		steps: []step{
			{manager: "argocd-controller", entries: argo},
			{manager: "kubectl-set", change: setEnv("DEBUG", "1"), entries: argoAndEnv},
			{manager: "argocd-controller", change: image("nginx:1.28"), entries: argoAndEnv},
			{manager: "kubectl-set", change: both(image("nginx:1.27")), entries: argoAndEnv},
		},
		want: []string{"sync by Argo CD app shop",
			`outside Argo CD app shop [sync]; spec.template.spec.containers[0].env: declared none, was none, now [{"name":"DEBUG","value":"1"}]`,
			"sync by Argo CD app shop",
			`outside Argo CD app shop [sync]; spec.template.spec.containers[0].image: declared "nginx:1.28", was "nginx:1.28", now "nginx:1.27"`},
	}, {
		name: "changed and changed back by hand: the second write puts it back",
		meta: argoMarks,
		steps: []step{
			{manager: "argocd-controller", entries: argo},
			{manager: "kubectl-edit", change: image("nginx:1.28"), entries: argo},
			{manager: "kubectl-edit", change: image("nginx:1.27"), entries: argo},
		},
		want: []string{"sync by Argo CD app shop",
			`outside Argo CD app shop [sync]; spec.template.spec.containers[0].image: declared "nginx:1.27", was "nginx:1.27", now "nginx:1.28"`,
			"outside Argo CD app shop [sync]"},
	}, {
		name: "never seen written by its owner: the declared state is unknown",
		meta: argoMarks,
		steps: []step{
			{manager: "kubectl-create", entries: argo},
			{manager: "kubectl-edit", change: scale(3), entries: argoAfterScale},
		},
		want: []string{"-", "outside Argo CD app shop [unknown]; spec.replicas: declared unknown, was 2, now 3"},
	}, {
		name: "a label the owner does not declare is not drift",
		meta: argoMarks,
		steps: []step{
			{manager: "argocd-controller", entries: argo},
			{manager: "kubectl-label", change: label("oncall", "bob"), entries: argo},
		},
		want: []string{"sync by Argo CD app shop", "-"},
	}, {
		name: "a label the owner declares is",
		meta: `{"labels":{"kustomize.toolkit.fluxcd.io/name":"apps","kustomize.toolkit.fluxcd.io/namespace":"flux-system","team":"a"}}`,
		steps: []step{
			{manager: "kustomize-controller", entries: []any{entry("kustomize-controller", "", ownsLabel)}},
			{manager: "kubectl-label", change: label("team", "b"), entries: []any{entry("kustomize-controller", "", ownsLabel)}},
		},
		want: []string{"sync by Flux Kustomization flux-system/apps", `outside Flux Kustomization flux-system/apps [sync]; metadata.labels.team: declared "a", was "a", now "b"`},
	}, {
		name: "Flux leaves an object with ssa: IfNotPresent alone: no drift",
		meta: `{"labels":{"kustomize.toolkit.fluxcd.io/name":"apps","kustomize.toolkit.fluxcd.io/namespace":"flux-system","team":"a"},"annotations":{"kustomize.toolkit.fluxcd.io/ssa":"IfNotPresent"}}`,
		steps: []step{
			{manager: "kustomize-controller", entries: []any{entry("kustomize-controller", "", ownsLabel)}},
			{manager: "kubectl-label", change: label("team", "b"), entries: []any{entry("kustomize-controller", "", ownsLabel)}},
		},
		want: []string{"sync by Flux Kustomization flux-system/apps", "-"},
	}, {
		name: "Flux keeps fields added beside its own with ssa: Merge, and puts back its own",
		meta: `{"labels":{"kustomize.toolkit.fluxcd.io/name":"apps","kustomize.toolkit.fluxcd.io/namespace":"flux-system","team":"a"},"annotations":{"kustomize.toolkit.fluxcd.io/ssa":"Merge"}}`,
		steps: []step{
			{manager: "kustomize-controller", entries: []any{entry("kustomize-controller", "", ownsEverthing)}},
			{manager: "kubectl-set", change: setEnv("DEBUG", "1"), entries: []any{entry("kustomize-controller", "", ownsEverthing)}},
			{manager: "kubectl-edit", change: scale(5), entries: []any{entry("kustomize-controller", "", ownsEverthing)}},
		},
		want: []string{"sync by Flux Kustomization flux-system/apps", "-",
			"outside Flux Kustomization flux-system/apps [sync]; spec.replicas: declared 2, was 2, now 5"},
	}, {
		name: "an HPA's scaling is not drift",
		meta: argoMarks,
		steps: []step{
			{manager: "argocd-controller", entries: argo},
			{manager: "kube-controller-manager", subresource: "scale", change: scale(4), entries: argo},
		},
		want: []string{"sync by Argo CD app shop", "-"},
	}, {
		name: "no GitOps marks: no fact",
		meta: `{"labels":{"app":"web"}}`,
		steps: []step{
			{manager: "argocd-controller", entries: argo},
			{manager: "kubectl-edit", change: scale(5), entries: argo},
		},
		want: []string{"-", "-"},
	}, {
		name: "marks of an owner that never wrote it (helm template | kubectl apply): no fact",
		meta: `{"labels":{"app.kubernetes.io/instance":"web","app.kubernetes.io/managed-by":"Helm"}}`,
		steps: []step{
			{manager: "kubectl-client-side-apply", entries: []any{entry("kubectl-client-side-apply", "", ownsReplicas)}},
			{manager: "kubectl-edit", change: scale(5), entries: []any{entry("kubectl-client-side-apply", "", ownsReplicas)}},
		},
		want: []string{"-", "-"},
	}, {
		name: "a writer no managedFields entry names: no verdict",
		meta: argoMarks,
		steps: []step{
			{manager: "argocd-controller", entries: argo},
			{manager: "", change: scale(0), entries: argo},
		},
		want: []string{"sync by Argo CD app shop", "-"},
	}, {
		name: "a Helm release, and a Flux HelmRelease (whose objects carry Helm's marks too)",
		meta: `{"labels":{"app.kubernetes.io/managed-by":"Helm","app.kubernetes.io/instance":"web"},"annotations":{"meta.helm.sh/release-name":"web","meta.helm.sh/release-namespace":"shop"}}`,
		steps: []step{
			{manager: "helm", entries: []any{entry("helm", "", ownsReplicas)}},
			{manager: "kubectl-edit", change: scale(5), entries: []any{entry("helm", "", ownsReplicas)}},
			{manager: "helm-controller", change: label("helm.toolkit.fluxcd.io/name", "web"), entries: []any{entry("helm", "", ownsReplicas), entry("helm-controller", "", ownsReplicas)}},
		},
		want: []string{"sync by Helm release shop/web", "outside Helm release shop/web [sync]; spec.replicas: declared 2, was 2, now 5", "sync by Flux HelmRelease web"},
	}, {
		name: "never seen written by its owner, but applied client-side: last-applied-configuration is the declared state",
		meta: `{"annotations":{"argocd.argoproj.io/tracking-id":"shop:apps/Deployment:shop/web","kubectl.kubernetes.io/last-applied-configuration":` +
			strconv.Quote(`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}}}`) + `}}`,
		steps: []step{
			{manager: "kubectl-create", entries: []any{entry("argocd-application-controller", "", ownsReplicas)}},
			{manager: "kubectl-edit", change: scale(3), entries: []any{entry("kubectl-edit", "", ownsReplicas)}},
			{manager: "argocd-application-controller", change: scale(2), entries: []any{entry("argocd-application-controller", "", ownsReplicas)}},
		},
		want: []string{"-", "outside Argo CD app shop [last-applied]; spec.replicas: declared 2, was 2, now 3",
			"sync by Argo CD app shop, put back after 2.5s (u1/2/updated)"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := run(t, tc.meta, tc.steps)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("facts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// Marks of two owners give no verdict, and one log line for the object.
func TestTwoOwnersGetOneLogLineAndNoFact(t *testing.T) {
	meta := `{"labels":{"kustomize.toolkit.fluxcd.io/name":"apps"},"annotations":{"argocd.argoproj.io/tracking-id":"shop:apps/Deployment:shop/web"}}`
	both := []any{entry("argocd-controller", "", ownsReplicas), entry("kustomize-controller", "", ownsReplicas)}
	got, logs := run(t, meta, []step{
		{manager: "argocd-controller", entries: both},
		{manager: "kustomize-controller", change: scale(3), entries: both},
		{manager: "kubectl-edit", change: scale(4), entries: both},
	})
	if fmt.Sprint(got) != "[- - -]" {
		t.Errorf("facts %v, want none", got)
	}
	if n := strings.Count(logs.String(), "two GitOps owners"); n != 1 {
		t.Errorf("%d log lines, want 1:\n%s", n, logs)
	}
}

// The memory of objects stays bounded: the least recently changed goes.
func TestMemoryIsBounded(t *testing.T) {
	m := newMemory(2)
	m.ensure("a")
	m.ensure("b")
	m.get("a")
	m.ensure("c")
	if m.len() != 2 || m.get("b") != nil || m.get("a") == nil || m.get("c") == nil {
		t.Errorf("kept %v, want a and c", m.objects)
	}
	m.forget("a")
	if m.len() != 1 {
		t.Errorf("kept %d after forgetting, want 1", m.len())
	}
}

// redacting is the cache transform of resource r, as the pipeline
// hands it to AppliedBook.Observe.
func redacting(t *testing.T, d *diff.Differ, r change.Resource) func(*unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	transform := d.CacheTransform(r)
	return func(u *unstructured.Unstructured) *unstructured.Unstructured {
		out, err := transform(u)
		if err != nil {
			t.Fatal(err)
		}
		return out.(*unstructured.Unstructured)
	}
}

// A Secret's last-applied-configuration holds its values in the clear:
// what the book keeps of it is redacted as the cached Secret is.
func TestLastAppliedOfASecretKeepsNoValue(t *testing.T) {
	d, err := diff.New(diff.Options{Rules: diff.Rules{Defaults: diff.AllDefaults}})
	if err != nil {
		t.Fatal(err)
	}
	secrets := change.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Kind: "Secret", Namespaced: true}
	applied := `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db"},"data":{"password":"aHVudGVyMg=="},"stringData":{"token":"hunter2"}}`
	secret := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "db", "namespace": "shop", "uid": "s1", "resourceVersion": "5",
			"labels":      map[string]any{"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"},
			"annotations": map[string]any{lastAppliedAnnotation: applied}},
		"data": map[string]any{"password": "aHVudGVyMg=="}}}
	book := NewAppliedBook()
	book.Observe(secret, redacting(t, d, secrets))
	declared := book.At("s1", "5")
	if declared == nil {
		t.Fatal("nothing kept of the Secret's last-applied-configuration")
	}
	b, _ := json.Marshal(declared)
	for _, clear := range []string{"aHVudGVyMg==", "hunter2"} {
		if strings.Contains(string(b), clear) {
			t.Errorf("kept %s, with a value in the clear", b)
		}
	}
	if book.At("s1", "4") != nil {
		t.Error("a state before the one observed names what it declared")
	}
}

// What an Application's ignoreDifferences ignores is not drift: a JSON
// pointer's field and what it names below it, a managed-fields manager's
// writes; the rest still is. A pointer that is not one, and jq
// expressions, are said once in the log.
func TestArgoCDIgnoreDifferences(t *testing.T) {
	var logs bytes.Buffer
	ignores := NewIgnores(slog.New(slog.NewTextHandler(&logs, nil)))
	app := &unstructured.Unstructured{}
	if err := app.UnmarshalJSON([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"shop","namespace":"argocd"},
"spec":{"ignoreDifferences":[{"group":"apps","kind":"Deployment","jsonPointers":["/spec/replicas","spec/paused"],"jqPathExpressions":[".spec.x"]},
{"group":"apps","kind":"Deployment","name":"web","managedFieldsManagers":["rollouts-controller"]},
{"group":"apps","kind":"Deployment","name":"other","jsonPointers":["/spec/template"]}]}}`)); err != nil {
		t.Fatal(err)
	}
	ignores.Observe(app)
	ignores.Observe(app) // seen again: said once
	argo := []any{entry("argocd-controller", "", ownsEverthing)}
	got, _ := runWith(t, argoMarks, []step{
		{manager: "argocd-controller", entries: argo},
		{manager: "kubectl", subresource: "scale", change: scale(5), entries: argo},
		{manager: "rollouts-controller", change: image("nginx:1.28"), entries: argo},
		{manager: "kubectl-edit", change: image("nginx:1.29"), entries: argo},
	}, ignores)
	want := []string{"sync by Argo CD app shop", "-", "-",
		`outside Argo CD app shop [sync]; spec.template.spec.containers[0].image: declared "nginx:1.27", was "nginx:1.28", now "nginx:1.29"`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("facts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := strings.Count(logs.String(), "not honoured"); n != 1 || !strings.Contains(logs.String(), "not a JSON pointer: spec/paused") || !strings.Contains(logs.String(), "jqPathExpressions") {
		t.Errorf("%d log lines, want one naming the broken pointer and jq:\n%s", n, logs.String())
	}
	ignores.Forget("Application", "argocd", "shop")
	got, _ = runWith(t, argoMarks, []step{{manager: "argocd-controller", entries: argo}, {manager: "kubectl-edit", change: scale(5), entries: argo}}, ignores)
	if got[1] == "-" {
		t.Error("a deleted Application's ignoreDifferences still honoured")
	}
}

// What a HelmRelease's driftDetection.ignore names is not drift: a path
// for the objects its target selects, or for every object without a
// target; the rest still is. A target by selector is said once in the
// log and not honoured.
func TestHelmReleaseDriftDetectionIgnore(t *testing.T) {
	var logs bytes.Buffer
	ignores := NewIgnores(slog.New(slog.NewTextHandler(&logs, nil)))
	hr := &unstructured.Unstructured{}
	if err := hr.UnmarshalJSON([]byte(`{"apiVersion":"helm.toolkit.fluxcd.io/v2","kind":"HelmRelease","metadata":{"name":"web","namespace":"shop"},
"spec":{"driftDetection":{"mode":"enabled","ignore":[{"paths":["/spec/replicas"],"target":{"kind":"Deployment"}},
{"paths":["/metadata/labels/team"]},{"paths":["/spec/paused"],"target":{"kind":"Deployment","labelSelector":"a=b"}}]}}}`)); err != nil {
		t.Fatal(err)
	}
	ignores.Observe(hr)
	meta := `{"labels":{"helm.toolkit.fluxcd.io/name":"web","helm.toolkit.fluxcd.io/namespace":"shop","team":"a"}}`
	owned := []any{entry("helm-controller", "", merge(ownsEverthing, ownsLabel))}
	got, _ := runWith(t, meta, []step{
		{manager: "helm-controller", entries: owned},
		{manager: "kubectl-edit", change: scale(5), entries: owned},
		{manager: "kubectl-label", change: label("team", "b"), entries: owned},
		{manager: "kubectl-edit", change: image("nginx:1.29"), entries: owned},
	}, ignores)
	want := []string{"sync by Flux HelmRelease shop/web", "-", "-",
		`outside Flux HelmRelease shop/web [sync]; spec.template.spec.containers[0].image: declared "nginx:1.27", was "nginx:1.27", now "nginx:1.29"`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("facts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := strings.Count(logs.String(), "not honoured"); n != 1 || !strings.Contains(logs.String(), "selector") {
		t.Errorf("%d log lines, want one naming the selector:\n%s", n, logs.String())
	}
	ignores.Forget("HelmRelease", "shop", "web")
	got, _ = runWith(t, meta, []step{{manager: "helm-controller", entries: owned}, {manager: "kubectl-edit", change: scale(5), entries: owned}}, ignores)
	if got[1] == "-" {
		t.Error("a deleted HelmRelease's ignore still honoured")
	}
}

// What argocd-cm's system-level ignoreDifferences name is not drift for
// objects Argo CD owns: .apps_Deployment's pointers and managers for
// Deployments, .all's for every kind; YAML that does not parse and a
// pointer that is not one are said once in the log and left out; other
// ConfigMaps are passed over; deleting argocd-cm drops its rules.
func TestArgoCDSystemLevelIgnoreDifferences(t *testing.T) {
	var logs bytes.Buffer
	ignores := NewIgnores(slog.New(slog.NewTextHandler(&logs, nil)))
	cm := func(name string, data map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": "argocd"}, "data": data}}
	}
	ignores.Observe(cm("other", map[string]any{systemIgnorePrefix + "all": "jsonPointers: [/spec]"}))
	elsewhere := cm(argoSettings, map[string]any{systemIgnorePrefix + "all": "jsonPointers: [/spec, /metadata]"})
	elsewhere.SetNamespace("team-a") // whoever may write a ConfigMap there hides nothing of Argo CD's apps
	ignores.Observe(elsewhere)
	ignores.Observe(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": "shop", "namespace": "argocd"}}})
	settings := cm(argoSettings, map[string]any{
		systemIgnorePrefix + "apps_Deployment": "jsonPointers:\n- /spec/replicas\n- spec/paused\nmanagedFieldsManagers:\n- rollouts-controller\n",
		systemIgnorePrefix + "all":             "jsonpointers: [/metadata/labels/team]\njqPathExpressions: ['.x']",
		systemIgnorePrefix + "Service":         "jsonPointers: [/spec/ports",
		"url":                                  "https://argocd.example.com",
	})
	ignores.Observe(settings)
	ignores.Observe(settings) // seen again: said once
	argo := []any{entry("argocd-controller", "", merge(ownsEverthing, ownsLabel))}
	meta := `{"labels":{"app.kubernetes.io/instance":"shop","team":"a"}}`
	got, _ := runWith(t, meta, []step{
		{manager: "argocd-controller", entries: argo},
		{manager: "kubectl", subresource: "scale", change: scale(5), entries: argo},
		{manager: "kubectl-label", change: label("team", "b"), entries: argo},
		{manager: "rollouts-controller", change: image("nginx:1.28"), entries: argo},
		{manager: "kubectl-edit", change: image("nginx:1.29"), entries: argo},
	}, ignores)
	want := []string{"sync by Argo CD app shop", "-", "-", "-",
		`outside Argo CD app shop [sync]; spec.template.spec.containers[0].image: declared "nginx:1.27", was "nginx:1.28", now "nginx:1.29"`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("facts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := strings.Count(logs.String(), "not honoured"); n != 1 ||
		!strings.Contains(logs.String(), "not a JSON pointer: spec/paused") || !strings.Contains(logs.String(), "jqPathExpressions") ||
		!strings.Contains(logs.String(), systemIgnorePrefix+"Service: not YAML") {
		t.Errorf("%d log lines, want one naming the broken pointer, jq and the YAML that does not parse:\n%s", n, logs.String())
	}
	ignores.Forget("ConfigMap", "argocd", argoSettings)
	got, _ = runWith(t, meta, []step{{manager: "argocd-controller", entries: argo}, {manager: "kubectl-edit", change: scale(5), entries: argo}}, ignores)
	if got[1] == "-" {
		t.Error("a deleted argocd-cm's ignoreDifferences still honoured")
	}
}

// fakeManifests declares one object for release shop/web.
type fakeManifests map[string]any

func (f fakeManifests) Declared(releaseNamespace, release string, rec *record.Change) map[string]any {
	if releaseNamespace != "shop" || release != "web" || rec.Kind != "Deployment" || rec.Name != "web" {
		return nil
	}
	return f
}

// An object of a Helm release that kubediff never saw Helm write is
// compared with the release's manifest: a hand edit says the manifest's
// value (declaredFrom manifest); without a manifest it says none.
func TestHelmManifestIsTheDeclaredSource(t *testing.T) {
	d, err := diff.New(diff.Options{Rules: diff.Rules{Defaults: diff.AllDefaults}})
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]any{"name": "web", "namespace": "shop", "uid": "u1",
		"annotations": map[string]any{helmNameAnnotation: "web", helmNamespaceAnnotation: "shop"},
		"labels":      map[string]any{managedByLabel: "Helm"}}
	helmOwns := entry("helm", "", ownsReplicas)
	for _, tc := range []struct {
		manifests Manifests
		want      string
	}{
		{fakeManifests{"apiVersion": "apps/v1", "kind": "Deployment", "spec": map[string]any{"replicas": int64(4)}},
			"outside Helm release shop/web [manifest]; spec.replicas: declared 4, was 2, now 5"},
		{nil, "outside Helm release shop/web [unknown]; spec.replicas: declared unknown, was 2, now 5"},
	} {
		cls := New(nil, nil, nil)
		if tc.manifests != nil {
			cls.SetManifests(tc.manifests)
		}
		old := deploymentAt(nil, meta, 1)
		old.Object["metadata"].(map[string]any)["managedFields"] = []any{helmOwns}
		obj := deploymentAt(old, meta, 2)
		scale(5)(obj.Object["spec"].(map[string]any), nil)
		obj.Object["metadata"].(map[string]any)["managedFields"] = []any{helmOwns, entry("kubectl-patch", "", ownsReplicas)}
		rec, _ := d.Diff(change.Event{Type: change.Updated, Resource: deployments, Old: old, New: obj})
		rec.Manager = &record.Manager{Name: "kubectl-patch"}
		cls.Classify(old, obj, &rec)
		if got := summary(rec.GitOps); got != tc.want {
			t.Errorf("got %s\nwant %s", got, tc.want)
		}
	}
}

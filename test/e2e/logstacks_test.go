package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/itchyny/gojq"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubediff/kubediff/pkg/notify/otlp"
	"github.com/kubediff/kubediff/pkg/record"
)

// TestLogStackRecipes checks docs/log-stacks.md against kubediff's real
// output: each jq recipe, run with gojq over the JSON lines of a small
// scenario, gives what the doc says it does; each field a Loki,
// Elasticsearch or collector recipe names is in the records (or their
// OTLP attributes).
func TestLogStackRecipes(t *testing.T) {
	docBytes, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "log-stacks.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(docBytes)

	ns := newNamespace(t)
	w := startWatch(t, "-n", ns)
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27"}}}}}}
	if _, err := clients.AppsV1().Deployments(ns).Create(bg, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := `{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.28"}]}}}}`
	if _, err := clients.AppsV1().Deployments(ns).Patch(bg, "web", types.StrategicMergePatchType, []byte(p), metav1.PatchOptions{FieldManager: "kubectl-set"}); err != nil {
		t.Fatal(err)
	}
	if _, err := clients.CoreV1().ConfigMaps(ns).Create(bg, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gone"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := clients.CoreV1().ConfigMaps(ns).Delete(bg, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitRecords("ConfigMap", ns, "gone", 2)
	w.waitRecords("Deployment", ns, "web", 2)
	var inputs []any
	for _, line := range strings.Split(strings.TrimSpace(w.stdout.String()), "\n") {
		var v any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, v)
	}
	// The doc's "prod" is this test's namespace.
	run := func(query string) []string {
		t.Helper()
		if !strings.Contains(doc, query) {
			t.Fatalf("docs/log-stacks.md no longer holds the recipe %s", query)
		}
		q, err := gojq.Parse(strings.ReplaceAll(query, `"prod"`, fmt.Sprintf("%q", ns)))
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		var out []string
		emit := func(iter gojq.Iter) {
			for v, ok := iter.Next(); ok; v, ok = iter.Next() {
				if err, isErr := v.(error); isErr {
					t.Fatalf("%s: %v", query, err)
				}
				b, _ := json.Marshal(v)
				out = append(out, string(b))
			}
		}
		switch {
		case strings.HasPrefix(query, "[inputs]"): // jq -n: the stream through inputs
			code, err := gojq.Compile(q, gojq.WithInputIter(gojq.NewIter(inputs...)))
			if err != nil {
				t.Fatal(err)
			}
			emit(code.Run(nil))
		case strings.HasPrefix(query, "group_by"): // jq -s: the stream as one array
			emit(q.Run(inputs))
		default:
			for _, in := range inputs {
				emit(q.Run(in))
			}
		}
		return out
	}
	images := run(`select(.kind == "Deployment" and (.changed // "" | test("image"))) | {time, object: (.namespace + "/" + .name), by: .manager.name, images: [.changes[] | select(.field | test("image")) | {from, to}]}`)
	if len(images) != 1 || !strings.Contains(images[0], `"by":"kubectl-set"`) || !strings.Contains(images[0], `"images":[{"from":"nginx:1.27","to":"nginx:1.28"}]`) {
		t.Errorf("image recipe gave %v", images)
	}
	if deleted := run(`select(.type == "deleted" and .namespace == "prod") | {time, kind, name}`); len(deleted) != 1 || !strings.Contains(deleted[0], `"name":"gone"`) {
		t.Errorf("deletions recipe gave %v", deleted)
	}
	if perKind := run(`group_by(.kind) | map({kind: .[0].kind, records: length})`); len(perKind) != 1 || perKind[0] != `[{"kind":"ConfigMap","records":2},{"kind":"Deployment","records":2}]` {
		t.Errorf("per-kind recipe gave %v", perKind)
	}
	twice := inputs
	inputs = append(append([]any(nil), inputs...), twice...) // as two replicas would have written
	if once := run(`[inputs] | unique_by(.id) | .[]`); len(once) != len(twice) {
		t.Errorf("exactly-once recipe gave %d records for %d distinct changes", len(once), len(twice))
	}

	// Loki's json stage: nested keys joined with "_".
	var flat []map[string]any
	for _, c := range w.records() {
		flat = append(flat, flatten(c))
	}
	checked := 0
	for _, logql := range regexp.MustCompile("(?s)```logql\n(.*?)```").FindAllStringSubmatch(doc, -1) {
		for _, m := range regexp.MustCompile(`\| ([a-z_]+)(?:=~|=|!=)"|\{\{\.([a-z_]+)\}\}|by \(([a-z_]+)\)`).FindAllStringSubmatch(logql[1], -1) {
			field := m[1] + m[2] + m[3]
			checked++
			if !anyHas(flat, field) {
				t.Errorf("LogQL recipe names %s, which no record has once flattened", field)
			}
		}
	}
	if checked < 6 {
		t.Errorf("found only %d fields in the LogQL recipes: the check is not reading them", checked)
	}
	// Elasticsearch: the pipeline's and the query's fields.
	for _, field := range []string{"time", "kind", "changed", "id"} {
		if !anyHas(flat, field) {
			t.Errorf("the Elasticsearch recipe uses %s, which no record has", field)
		}
	}
	// The collector: attributes its filter and the doc name.
	var attrs []map[string]any
	for _, c := range w.records() {
		a := map[string]any{}
		for _, kv := range otlp.Attributes(c) {
			a[string(kv.Key)] = kv.Value.String()
		}
		attrs = append(attrs, a)
	}
	// The user comes only with a source of who made each change
	// (docs/identity.md), which this run has not: a record as one names it.
	if recs := w.records(); len(recs) > 0 {
		withUser := recs[0]
		withUser.User = &record.User{Name: "alice", Groups: []string{"devs"}}
		a := map[string]any{}
		for _, kv := range otlp.Attributes(withUser) {
			a[string(kv.Key)] = kv.Value.String()
		}
		attrs = append(attrs, a)
	}
	named := regexp.MustCompile(`attributes\["([a-z0-9_.]+)"\]|`+"`((?:kubediff|k8s)\\.[a-z_.]+)`").FindAllStringSubmatch(doc, -1)
	if len(named) < 8 {
		t.Errorf("found only %d attributes in the collector recipe: the check is not reading them", len(named))
	}
	for _, m := range named {
		name := m[1] + m[2]
		if strings.HasSuffix(name, ".name") && strings.Count(name, ".") == 2 && !strings.HasPrefix(name, "k8s.namespace") && !strings.HasPrefix(name, "k8s.object") {
			name = "k8s.deployment.name" // the doc's examples of per-kind names; a Deployment's is in the records
		}
		if !anyHas(attrs, name) {
			t.Errorf("the collector recipe names the attribute %s, which no record's OTLP attributes have", name)
		}
	}
}

// flatten is a record as Loki's json stage sees it.
func flatten(c record.Change) map[string]any {
	b, _ := json.Marshal(c)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	out := map[string]any{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if obj, ok := v.(map[string]any); ok {
			for k, sub := range obj {
				key := k
				if prefix != "" {
					key = prefix + "_" + k
				}
				walk(key, sub)
			}
			return
		}
		out[prefix] = v
	}
	walk("", m)
	return out
}

func anyHas(maps []map[string]any, key string) bool {
	for _, m := range maps {
		if _, ok := m[key]; ok {
			return true
		}
	}
	return false
}

package drift

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubediff/kubediff/pkg/record"
)

// BenchmarkClassify is the stage's cost per update: an object without
// GitOps marks (most of a cluster), and a GitOps-owned Deployment
// scaled by hand and put back by its owner, in turns, with 500 such
// objects known.
func BenchmarkClassify(b *testing.B) {
	plain := benchDeployment(`{"labels":{"app":"web"}}`, 2, nil)
	b.Run("no owner", func(b *testing.B) {
		c := New(nil, nil, nil)
		rec := record.Change{UID: "u", Type: record.Updated, Manager: &record.Manager{Name: "kubectl-edit"},
			Changes: []record.FieldChange{{Op: record.OpReplace, Path: "/spec/replicas", Field: "spec.replicas", From: int64(2), To: int64(3)}}}
		b.ReportAllocs()
		for b.Loop() {
			r := rec
			c.Classify(plain, plain, &r)
		}
	})
	b.Run("GitOps-owned", func(b *testing.B) {
		c := New(nil, nil, nil)
		argo := []any{entry("argocd-controller", "", ownsEverthing)}
		objs := make([][2]*unstructured.Unstructured, 500)
		uids := make([]string, len(objs))
		for i := range objs {
			uids[i] = fmt.Sprint(i)
			objs[i] = [2]*unstructured.Unstructured{benchDeployment(argoMarks, 2, argo), benchDeployment(argoMarks, 5, argo)}
			c.Classify(nil, objs[i][0], &record.Change{UID: uids[i], Type: record.Added, Manager: &record.Manager{Name: "argocd-controller"}})
		}
		scaled := []record.FieldChange{{Op: record.OpReplace, Path: "/spec/replicas", Field: "spec.replicas", From: int64(2), To: int64(5)}}
		back := []record.FieldChange{{Op: record.OpReplace, Path: "/spec/replicas", Field: "spec.replicas", From: int64(5), To: int64(2)}}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			o := objs[i%len(objs)]
			rec := record.Change{UID: uids[i%len(objs)], Type: record.Updated, Manager: &record.Manager{Name: "kubectl-edit"}, Changes: scaled}
			c.Classify(o[0], o[1], &rec)
			rec = record.Change{UID: rec.UID, Type: record.Updated, Manager: &record.Manager{Name: "argocd-controller"}, Changes: back}
			c.Classify(o[1], o[0], &rec)
			i++
		}
	})
}

func benchDeployment(meta string, replicas int64, entries []any) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":` + meta + `}`)); err != nil {
		panic(err)
	}
	obj.SetName("web")
	obj.Object["metadata"].(map[string]any)["managedFields"] = entries
	obj.Object["spec"] = map[string]any{"replicas": replicas, "template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "nginx:1.27"}}}}}
	return obj
}

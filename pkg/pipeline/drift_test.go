package pipeline

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/diff"
	"github.com/kubediff/kubediff/pkg/metrics"
	"github.com/kubediff/kubediff/pkg/metrics/metricstest"
	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/watcher"
)

// helmConfigMap is ConfigMap shop/app that Helm release shop/web applied,
// at resourceVersion rv with data.k = k, its managedFields entries each
// a manager and the time of its last write (Helm owns data.k until
// another manager takes it).
func helmConfigMap(rv, k string, writes ...[2]string) *unstructured.Unstructured {
	var entries []any
	for _, w := range writes {
		entries = append(entries, map[string]any{"manager": w[0], "operation": "Update", "time": w[1], "fieldsType": "FieldsV1",
			"fieldsV1": map[string]any{"f:data": map[string]any{"f:k": map[string]any{}}}})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "app", "namespace": "shop", "uid": "u-app", "resourceVersion": rv,
			"labels":        map[string]any{"app.kubernetes.io/managed-by": "Helm"},
			"annotations":   map[string]any{"meta.helm.sh/release-name": "web", "meta.helm.sh/release-namespace": "shop"},
			"managedFields": entries},
		"data": map[string]any{"k": k},
	}}
}

// The gitops stage keeps kubediff_drift_open and kubediff_drift_total:
// an outside change opens the drift of Helm release shop/web's object
// (1), Helm's write that puts it back ends it (0); every record of the
// object counts by tool and via.
func TestGitOpsStageKeepsTheDriftMetrics(t *testing.T) {
	d, err := diff.New(diff.Options{Rules: diff.Rules{Defaults: diff.AllDefaults}})
	if err != nil {
		t.Fatal(err)
	}
	q := notify.NewQueue("test", &collected{}, notify.QueueOptions{Size: 100, Log: quiet})
	m := metrics.New()
	p := New(Options{Differ: d, Router: notify.Router{{Queue: q}}, Metrics: m, Log: quiet})
	helm1 := [2]string{"helm", "2026-01-01T10:00:00Z"}
	helm2 := [2]string{"helm", "2026-01-01T10:02:00Z"}
	edit := [2]string{"kubectl-edit", "2026-01-01T10:01:00Z"}
	states := []*unstructured.Unstructured{
		helmConfigMap("1", "0", [2]string{"helm", "2026-01-01T09:00:00Z"}),
		helmConfigMap("2", "1", helm1),
		helmConfigMap("3", "2", helm1, edit),
		helmConfigMap("4", "1", helm2, edit),
	}
	open := func() float64 {
		return metricstest.Value(t, m.Registry, "kubediff_drift_open", "cluster", "", "namespace", "shop", "owner", "helm:shop/web")
	}
	for i, want := range []float64{0, 1, 0} {
		p.Handle(watcher.Event{Event: change.Event{Type: change.Updated, Resource: configMaps, Old: states[i], New: states[i+1]}})
		if got := open(); got != want {
			t.Errorf("after write %d: kubediff_drift_open = %v, want %v", i+1, got, want)
		}
	}
	for via, want := range map[string]float64{"sync": 2, "outside": 1} {
		if got := metricstest.Value(t, m.Registry, "kubediff_drift_total", "tool", "helm", "via", via); got != want {
			t.Errorf("kubediff_drift_total via %s = %v, want %v", via, got, want)
		}
	}
}

package pipeline

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/diff"
	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/journal"
	"github.com/kubediff/kubediff/pkg/metrics"
	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/watcher"
)

var (
	quiet      = slog.New(slog.NewTextHandler(io.Discard, nil))
	configMaps = discovery.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}
)

type collected struct {
	mu  sync.Mutex
	got []record.Change
}

func (c *collected) Notify(_ context.Context, ch record.Change) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, ch)
	return nil
}

func configMap(ns, rv string, data map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "app", "namespace": ns, "uid": "u-" + ns, "resourceVersion": rv},
		"data":     data,
	}}
}

// runPipeline passes events through a pipeline with one sink and returns
// what the sink received and the metrics.
func runPipeline(t *testing.T, o Options, events ...watcher.Event) ([]record.Change, *metrics.Metrics) {
	t.Helper()
	d, err := diff.New(diff.Options{Rules: diff.Rules{Defaults: diff.AllDefaults}})
	if err != nil {
		t.Fatal(err)
	}
	sink := &collected{}
	q := notify.NewQueue("test", sink, notify.QueueOptions{Size: 100, Log: quiet})
	o.Differ, o.Router, o.Metrics, o.Log = d, notify.Router{{Queue: q}}, metrics.New(), quiet
	p := New(o)
	for _, ev := range events {
		p.Handle(ev)
	}
	q.Close()
	q.Run(context.Background())
	return sink.got, o.Metrics
}

func update(ns string, from, to string) watcher.Event {
	return watcher.Event{Event: change.Event{Type: change.Updated, Resource: configMaps,
		Old: configMap(ns, "1", map[string]any{"k": from}), New: configMap(ns, "2", map[string]any{"k": to})}}
}

func TestPipelineReportsChangesAndCountsThem(t *testing.T) {
	onlyIgnored := update("default", "same", "same")
	onlyIgnored.New.SetGeneration(5) // bookkeeping only: no record
	got, m := runPipeline(t, Options{},
		update("default", "v1", "v2"),
		onlyIgnored,
		watcher.Event{Event: change.Event{Type: change.Deleted, Resource: configMaps, Old: configMap("default", "3", nil)}},
	)
	var summary []string
	for _, c := range got {
		summary = append(summary, fmt.Sprintf("%s %s %s", c.Type, c.ObjectName(), c.Changed))
	}
	if want := "updated default/app data.k|deleted default/app "; strings.Join(summary, "|") != want {
		t.Fatalf("records = %q, want %q", strings.Join(summary, "|"), want)
	}
	if n := testutil.ToFloat64(m.EventsObserved.WithLabelValues("configmaps", "updated")); n != 2 {
		t.Errorf("events observed = %v, want 2 (every event counts, reported or not)", n)
	}
	if n := testutil.ToFloat64(m.RecordsEmitted.WithLabelValues("configmaps", "updated")); n != 1 {
		t.Errorf("records emitted = %v, want 1", n)
	}
}

// Namespaces created after the plan that match an exclusion glob reach
// the watcher (the server's field selector names only those that existed
// then): the pipeline drops them.
func TestPipelineDropsExcludedNamespaces(t *testing.T) {
	got, _ := runPipeline(t, Options{ExcludeNamespaces: []string{"kube-*", "scratch"}},
		update("kube-new", "a", "b"), update("scratch", "a", "b"), update("prod", "a", "b"))
	if len(got) != 1 || got[0].Namespace != "prod" {
		t.Fatalf("records = %+v, want only prod's", got)
	}
}

// With an election, nothing is emitted until the gate leads; then the held
// records go out.
func TestPipelineHoldsRecordsUntilLeading(t *testing.T) {
	d, _ := diff.New(diff.Options{})
	sink := &collected{}
	q := notify.NewQueue("test", sink, notify.QueueOptions{Size: 100, Log: quiet})
	p := New(Options{Differ: d, Router: notify.Router{{Queue: q}}, Metrics: metrics.New(), Election: true, HoldRecords: 10, Log: quiet})
	p.Handle(update("default", "v1", "v2"))
	if q.Stats().Waiting != 0 {
		t.Fatal("a follower sent a record to the sinks")
	}
	p.Gate().Lead(0)
	q.Close()
	q.Run(context.Background())
	if len(sink.got) != 1 {
		t.Fatalf("after leading, sinks got %d records, want the 1 held", len(sink.got))
	}
}

// keeper collects what the keep stage hands the history.
type keeper struct {
	mu      sync.Mutex
	entries []journal.Entry
}

func (k *keeper) Keep(e ...journal.Entry) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.entries = append(k.entries, e...)
}

// A status-only update that the quiet rules keep out of the stream (a
// Deployment's replica counters) still reaches the history as the
// object's new state, without a record; an update of ignored fields only
// (bookkeeping) changes no kept state at all. Without this, `get --at`
// showed the status of the last reported change as if it were current.
func TestQuietUpdatesStillMoveTheKeptState(t *testing.T) {
	deployments := discovery.Resource{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: "Deployment", Namespaced: true}
	deployment := func(rv string, generation, replicas int64) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "shop", "uid": "d-1", "resourceVersion": rv, "generation": generation},
			"spec":     map[string]any{"replicas": int64(5)},
			"status":   map[string]any{"replicas": replicas, "observedGeneration": generation}}}
	}
	counters := watcher.Event{Event: change.Event{Type: change.Updated, Resource: deployments, Old: deployment("1", 2, 2), New: deployment("2", 2, 5)}}
	bookkeeping := watcher.Event{Event: change.Event{Type: change.Updated, Resource: deployments, Old: deployment("2", 2, 5), New: deployment("3", 2, 5)}}
	k := &keeper{}
	got, _ := runPipeline(t, Options{History: k}, counters, bookkeeping, update("default", "v1", "v2"))
	if len(got) != 1 || got[0].Kind != "ConfigMap" {
		t.Fatalf("records = %+v, want only the ConfigMap's (the counters are quiet)", got)
	}
	if len(k.entries) != 2 {
		t.Fatalf("history got %d entries, want the Deployment's new state and the ConfigMap's record", len(k.entries))
	}
	state := k.entries[0]
	if !state.StateOnly || state.Change.Name != "web" || state.New.GetResourceVersion() != "2" {
		t.Errorf("first entry = %+v, want web's state at resourceVersion 2, kept without a record", state)
	}
	if k.entries[1].StateOnly || k.entries[1].Change.Kind != "ConfigMap" {
		t.Errorf("second entry = %+v, want the ConfigMap's record", k.entries[1])
	}
}

package diff_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/diff"
)

// benchEvent loads a recorded Pod update and passes both objects through
// the cache transform, as the running watcher does.
func benchEvent(b *testing.B, d *diff.Differ, name string) change.Event {
	b.Helper()
	ev := loadCase(b, filepath.Join("testdata", "bench", name))
	transform := d.CacheTransform(ev.Resource)
	for _, obj := range []*unstructured.Unstructured{ev.Old, ev.New} {
		if _, err := transform(obj); err != nil {
			b.Fatal(err)
		}
	}
	return ev
}

func benchmarkDiff(b *testing.B, name string, wantRecord bool) {
	d := newDifferOpts(b, loadKeys(b), true)
	ev := benchEvent(b, d, name)
	if _, ok := d.Diff(ev); ok != wantRecord {
		b.Fatalf("record = %v, want %v", ok, wantRecord)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		d.Diff(ev)
	}
}

// The fixture Pod has 3 containers of 15 env vars each, probes, volumes
// and status: 15 KB of JSON without managedFields, 24 KB with them.
func BenchmarkDiffPodStatusChange(b *testing.B)  { benchmarkDiff(b, "pod-status", true) }
func BenchmarkDiffPodSpecChange(b *testing.B)    { benchmarkDiff(b, "pod-spec", true) }
func BenchmarkDiffPodIgnoredChange(b *testing.B) { benchmarkDiff(b, "pod-ignored", false) }

// BenchmarkDiffConfigMapChange is the benchmark's update (make bench): one
// key of a ConfigMap changed.
func BenchmarkDiffConfigMapChange(b *testing.B) {
	d := newDifferOpts(b, loadKeys(b), true)
	ev := loadCase(b, filepath.Join("testdata", "corpus", "configmap-keys"))
	transform := d.CacheTransform(ev.Resource)
	for _, obj := range []*unstructured.Unstructured{ev.Old, ev.New} {
		if _, err := transform(obj); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		d.Diff(ev)
	}
}

// BenchmarkCacheTransformConfigMap is the cache transform of a ConfigMap
// as the watch decodes it.
func BenchmarkCacheTransformConfigMap(b *testing.B) {
	d := newDiffer(b, nil)
	ev := loadCase(b, filepath.Join("testdata", "corpus", "configmap-keys"))
	transform := d.CacheTransform(ev.Resource)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := transform(ev.New.DeepCopy()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeAndTransform is what the watcher does per object it
// receives: decode the JSON, then the cache transform.
func BenchmarkDecodeAndTransform(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "bench", "pod-status", "new.json"))
	if err != nil {
		b.Fatal(err)
	}
	var compact map[string]any
	_ = json.Unmarshal(data, &compact)
	data, _ = json.Marshal(compact)
	d := newDiffer(b, nil)
	transform := d.CacheTransform(resources["Pod"])
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			b.Fatal(err)
		}
		if _, err := transform(u); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeRecord is the JSON encoding of one update record.
func BenchmarkEncodeRecord(b *testing.B) {
	d := newDiffer(b, loadKeys(b))
	c, _ := d.Diff(benchEvent(b, d, "pod-status"))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(c); err != nil {
			b.Fatal(err)
		}
	}
}

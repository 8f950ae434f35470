package watcher

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubediff/kubediff/pkg/state"
)

// settingsMap is a ConfigMap as people write them: a config file per key,
// the same shape in every object, with values of their own (endpoints,
// random tokens) that no dictionary can guess.
func settingsMap(rng *rand.Rand, i int, value string) *unstructured.Unstructured {
	data := map[string]any{"k": value}
	for j := range 6 {
		data[fmt.Sprintf("setting-%d", j)] = fmt.Sprintf("endpoint=https://svc-%d.example.internal:8443/api/v%d\ntoken=%016x%016x\nretries=%d\ntimeout=30s\n", i, j, rng.Uint64(), rng.Uint64(), j)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "data": data,
		"metadata": map[string]any{
			"name": fmt.Sprintf("cm-%d", i), "namespace": "ns", "resourceVersion": fmt.Sprint(100 + i),
			"uid": fmt.Sprintf("%08x-0000-4000-8000-%012x", i, rng.Uint64()>>16), "labels": map[string]any{"app": "web"},
			"managedFields": []any{map[string]any{"manager": "kubectl-create", "operation": "Update", "time": "2026-11-22T02:40:55Z"}},
		},
	}}
}

// packingStore returns a store as Watcher.start builds it with Compress.
func packingStore() (*store, *[]event) {
	w, got := testWatcher()
	w.packer = newPacker()
	return &store{toCache: cacheForm(w.cacheTransform(configMaps)), emit: w.emitter(configMaps), objects: map[string]*compactObject{}}, got
}

func TestPackedCacheIsSmallAndReportsExactly(t *testing.T) {
	s, got := packingStore()
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 200
	var list []any
	jsonBytes := 0
	for i := range n {
		u := settingsMap(rng, i, "one")
		list = append(list, u)
		raw, _ := json.Marshal(u.Object)
		jsonBytes += len(raw)
	}
	if err := s.Replace(list, "300"); err != nil {
		t.Fatal(err)
	}
	packed, plain, cached := 0, 0, 0
	for _, c := range s.objects {
		if c.dict != nil {
			packed++
		} else {
			plain++
		}
		cached += len(c.raw)
	}
	// The first objects make the dictionary and stay plain.
	if plain > dictSample || packed < n-dictSample {
		t.Fatalf("%d objects packed, %d plain; want all but the first %d packed", packed, plain, dictSample)
	}
	if ratio := float64(cached) / float64(jsonBytes); ratio > 0.4 {
		t.Fatalf("cached %d bytes for %d of JSON (%.2f): packing does not pay", cached, jsonBytes, ratio)
	}
	t.Logf("%d objects: %d bytes of JSON cached in %d (%.2f)", n, jsonBytes, cached, float64(cached)/float64(jsonBytes))

	// Every object reads back as it was cached (data.k upper-cased by the
	// test transform), and a change is reported against the packed state.
	for key, c := range s.objects {
		u, err := expand(c)
		if err != nil || u.GetNamespace()+"/"+u.GetName() != key || u.Object["data"].(map[string]any)["k"] != "ONE" {
			t.Fatalf("%s expands to %v, %v", key, u, err)
		}
	}
	changed := settingsMap(rng, 150, "two")
	changed.SetResourceVersion("400")
	changed.SetUID(list[150].(*unstructured.Unstructured).GetUID()) // the same object
	if err := s.Update(fromWatch(t, s, changed, true)); err != nil {
		t.Fatal(err)
	}
	if want := (event{Type: Updated, Old: "cm-150=ONE", New: "cm-150=TWO"}); len(*got) != 1 || (*got)[0] != want {
		t.Fatalf("events = %+v, want %+v", *got, want)
	}
	if c := s.objects["ns/cm-150"]; c.dict == nil || c.decoded != nil {
		t.Fatalf("the new state is cached packed and without its decoded form: %+v", c)
	}
}

// Targets of many types pack at once on their reflectors' goroutines,
// sharing the encoders: each object must come back as it went in.
func TestTypesPackConcurrentlyAndUnpackExactly(t *testing.T) {
	p := newPacker()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		tp := p.forType(fmt.Sprintf("group%d/v1/widgets", g%4)) // two targets a type
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 0))
			for i := range 100 {
				raw, _ := json.Marshal(settingsMap(rng, i, fmt.Sprint(g)).Object)
				packed, d := tp.pack(raw)
				c := &compactObject{raw: packed, dict: d}
				back, err := c.json()
				if err != nil || !bytes.Equal(back, raw) {
					errs <- fmt.Errorf("goroutine %d object %d: %v, unpacked %q", g, i, err, back)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// The state dir keeps plain JSON: dictionaries live only in memory, and a
// restart makes new ones.
func TestStateKeepsPackedObjectsAsJSON(t *testing.T) {
	dir := t.TempDir()
	st, err := state.Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Bind("c1"); err != nil {
		t.Fatal(err)
	}
	s, _ := packingStore()
	s.persist = &persisted{journal: st, target: "configmaps", logErr: func(err error) { t.Error(err) }}
	rng := rand.New(rand.NewPCG(3, 4))
	var list []any
	for i := range 50 {
		list = append(list, settingsMap(rng, i, "one"))
	}
	if err := s.Replace(list, "300"); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = state.Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Bind("c1"); err != nil {
		t.Fatal(err)
	}
	restored, ok, err := (&persisted{journal: st, target: "configmaps"}).restore(newPacker().forType("v1/configmaps"), nil)
	if err != nil || !ok || len(restored) != 50 {
		t.Fatalf("restored %d objects, %v, %v", len(restored), ok, err)
	}
	packed := 0
	for key, c := range restored {
		if c.dict != nil {
			packed++
		}
		u, err := expand(c)
		if err != nil || u.GetNamespace()+"/"+u.GetName() != key || u.Object["data"].(map[string]any)["k"] != "ONE" {
			t.Fatalf("%s restores as %v, %v", key, u, err)
		}
	}
	if packed < 50-dictSample {
		t.Fatalf("restored objects are packed again: %d of 50", packed)
	}
}

// BenchmarkPack is the cost of the packed cache form per object: packing
// a new state, and unpacking the old one to diff it.
func BenchmarkPack(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	tp := newPacker().forType("v1/configmaps")
	var raws [][]byte
	for i := range 100 {
		raw, _ := json.Marshal(settingsMap(rng, i, "v").Object)
		raws = append(raws, raw)
		tp.pack(raw)
	}
	b.Run("pack", func(b *testing.B) {
		in, out := 0, 0
		for i := 0; b.Loop(); i++ {
			packed, _ := tp.pack(raws[i%len(raws)])
			in, out = in+len(raws[i%len(raws)]), out+len(packed)
		}
		b.ReportMetric(float64(out)/float64(in), "packed/json")
	})
	b.Run("unpack", func(b *testing.B) {
		packed, d := tp.pack(raws[0])
		c := &compactObject{raw: packed, dict: d}
		for b.Loop() {
			if _, err := c.json(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

package release

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// bombSize is what the bomb decompresses to: 64 MiB, from about 64 KiB.
const bombSize = 64 << 20

// bombSecret is a Helm release Secret whose release JSON holds a
// manifest of bombSize zeros, the chart's metadata before it or after.
func bombSecret(t *testing.T, metadataFirst bool) *unstructured.Unstructured {
	t.Helper()
	meta := `"chart":{"metadata":{"name":"web","version":"6.6.6","appVersion":"2.0"}}`
	head, tail := `{"name":"web",`+meta+`,"manifest":"`, `"}`
	if !metadataFirst {
		head, tail = `{"name":"web","manifest":"`, `",`+meta+`}`
	}
	var zipped bytes.Buffer
	z, _ := gzip.NewWriterLevel(&zipped, gzip.BestCompression)
	io.WriteString(z, head)
	zeros := bytes.Repeat([]byte("0"), 1<<20)
	for range bombSize >> 20 {
		z.Write(zeros)
	}
	io.WriteString(z, tail)
	z.Close()
	if zipped.Len() > 1<<20 {
		t.Fatalf("the bomb compresses to %d bytes, more than a Secret holds", zipped.Len())
	}
	helmEncoded := base64.StdEncoding.EncodeToString(zipped.Bytes())
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
		"metadata": map[string]any{"name": "sh.helm.release.v1.web.v1", "namespace": "shop", "resourceVersion": "100",
			"labels": map[string]any{"owner": "helm", "name": "web", "version": "1", "status": "deployed"}},
		"data": map[string]any{"release": base64.StdEncoding.EncodeToString([]byte(helmEncoded))},
	}}
}

// allocated is how many bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A release record that decompresses to 64 MiB (a gzip bomb: zeros in
// its manifest) is read at most maxDecompressed, and its manifest kept
// at most maxManifest: its size is never allocated, whether the
// metadata comes before the bomb (the chart is named) or after it (it
// is not). Each of the two limits is said once, however many records.
func TestReleaseBombIsNotAllocated(t *testing.T) {
	for _, tc := range []struct {
		metadataFirst bool
		chart         string
		warnings      int
	}{{true, "web-6.6.6", 0}, {false, "", 1}} {
		t.Run(fmt.Sprintf("metadata first %v", tc.metadataFirst), func(t *testing.T) {
			secret := bombSecret(t, tc.metadataFirst)
			var logged bytes.Buffer
			b := NewBook(Options{Log: slog.New(slog.NewTextHandler(&logged, nil))})
			var declared map[string]any
			n := allocated(func() {
				b.Observe("", "secrets", secret)
				declared = b.Declared("shop", "web", "ConfigMap", "shop", "web") // its manifest read
			})
			t.Logf("observing the bomb and reading its manifest allocated %d KiB", n>>10)
			if n > 16<<20 {
				t.Errorf("observing the bomb allocated %d MiB, want under 16 MiB (it decompresses to %d MiB)", n>>20, bombSize>>20)
			}
			if declared != nil {
				t.Error("the bomb's manifest gave a declared object")
			}
			r, _ := b.Release(helmManaged, "200")
			if r.Revision != 1 || r.Chart != tc.chart {
				t.Errorf("release %+v, want revision 1, chart %q", *r, tc.chart)
			}
			second := secret.DeepCopy()
			second.SetName("sh.helm.release.v1.web.v2")
			second.SetLabels(map[string]string{"owner": "helm", "name": "web", "version": "2", "status": "deployed"})
			b.Observe("", "secrets", second)
			if got := strings.Count(logged.String(), "chart metadata is not within"); got != tc.warnings {
				t.Errorf("%d warnings of the chart for two such records, want %d:\n%s", got, tc.warnings, logged.String())
			}
			if got := strings.Count(logged.String(), "manifest is too large to keep"); got != 1 {
				t.Errorf("%d warnings of the manifest for two such records, want 1:\n%s", got, logged.String())
			}
		})
	}
}

// The scanner finds the chart's metadata past whatever comes before it
// (strings with escaped quotes and braces, numbers, literals, nested
// arrays and objects, keys that only start like "chart"), and finds
// none where the release has none or is not JSON.
func TestChartMetadataIsFound(t *testing.T) {
	const meta = `{"name":"web","version":"1.4.2","appVersion":"2.0","annotations":{"a":"}\""}}`
	for _, tc := range []struct {
		name, json, want string
	}{
		{"first", `{"chart":{"metadata":` + meta + `}}`, "web-1.4.2"},
		{"after everything", ` { "name" : "we\"b}{" , "version": -1.5e3, "ok": true, "no": null, "info": {"notes": ["a", {"b": "]"}], "n": 0}, "chartx": {}, "chart" : { "lock": null, "metadata" : ` + meta + ` , "templates": [] } } `, "web-1.4.2"},
		{"escaped key", `{"ch\u0061rt":{"metadata":` + meta + `}}`, ""},
		{"no chart", `{"name":"web","manifest":"kind: Secret"}`, ""},
		{"chart null", `{"chart":null}`, ""},
		{"no metadata", `{"chart":{"templates":[]}}`, ""},
		{"metadata not an object", `{"chart":{"metadata":"web"}}`, ""},
		{"cut short", `{"chart":{"metadata":{"name":"web"`, ""},
		{"not JSON", `chart: {metadata: {name: web}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cm := &unstructured.Unstructured{Object: map[string]any{"data": map[string]any{"release": base64.StdEncoding.EncodeToString([]byte(tc.json))}}}
			r, err := chartOf(cm, false)
			if r.Chart != tc.want || err != nil {
				t.Errorf("chart %q (%v), want %q", r.Chart, err, tc.want)
			}
		})
	}
}

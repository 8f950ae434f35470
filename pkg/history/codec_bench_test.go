package history

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// BenchmarkPackState: what keeping one state costs, with the JSON written
// through the tokenizer (packState) and, for the ratio in the same run,
// through encoding/json's reflection as before (reflection).
func BenchmarkPackState(b *testing.B) {
	var file strings.Builder
	for i := range 40 {
		fmt.Fprintf(&file, "service.%d.endpoint = https://svc-%d.internal:8443/api\n", i, i*7919)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": "prod", "uid": "0a1b2c3d", "resourceVersion": "123456",
			"labels": map[string]any{"app": "web", "team": "payments"}, "creationTimestamp": "2026-11-27T10:00:00Z"},
		"data": map[string]any{"app.properties": file.String(), "mode": "safe", "replicas": "3"},
	}}
	b.Run("tokenizer", func(b *testing.B) {
		for b.Loop() {
			if _, err := packState(u); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reflection", func(b *testing.B) {
		for b.Loop() {
			raw, err := u.MarshalJSON()
			if err != nil {
				b.Fatal(err)
			}
			_ = encoder.EncodeAll(raw, nil)
		}
	})
}

package history

import (
	"fmt"

	"github.com/klauspost/compress/zstd"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/objectjson"
)

// States are kept as zstd-compressed JSON at its fastest level: measured
// (pkg/history benchmarks), a ConfigMap holding a 1.7 KB config file
// packs to 0.58 of its JSON in 18 µs, where the default level took 25-29
// µs for 0.56. They are packed by the state store's flush, off the
// watch's path.
var (
	encoder, _ = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest))
	decoder, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
)

// packState is u's JSON, compressed. The JSON is written through a
// tokenizer (pkg/objectjson): encoding/json's reflection over the maps
// was a quarter of what keeping a state cost (BenchmarkPackState, a
// ConfigMap of 2.5 KB: 11.9 → 9.1 µs, 37 → 2 allocations).
func packState(u *unstructured.Unstructured) ([]byte, error) {
	raw, release, err := objectjson.Encode(u.Object)
	if err != nil {
		return nil, fmt.Errorf("history: encode %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	defer release()
	return encoder.EncodeAll(raw, nil), nil
}

func unpackState(v []byte) ([]byte, error) {
	raw, err := decoder.DecodeAll(v, nil)
	if err != nil {
		return nil, fmt.Errorf("history: damaged state: %w", err)
	}
	return raw, nil
}

// TypeNames are a type's names as kubectl accepts them, kept so that a
// query against a state dir resolves "deploy" without a cluster.
type TypeNames struct {
	Group      string   `json:"group"`
	Version    string   `json:"version"`
	Resource   string   `json:"resource"`
	Kind       string   `json:"kind"`
	Singular   string   `json:"singular,omitempty"`
	ShortNames []string `json:"shortNames,omitempty"`
	Namespaced bool     `json:"namespaced"`
}

// NamesOf are r's names.
func NamesOf(r change.Resource) TypeNames {
	return TypeNames{r.GVR.Group, r.GVR.Version, r.GVR.Resource, r.Kind, r.Singular, r.ShortNames, r.Namespaced}
}

// Type is the type the names are of.
func (t TypeNames) Type() change.Resource {
	r := change.Resource{Kind: t.Kind, Namespaced: t.Namespaced, Singular: t.Singular, ShortNames: t.ShortNames}
	r.GVR.Group, r.GVR.Version, r.GVR.Resource = t.Group, t.Version, t.Resource
	return r
}

// Package listkeys reads, from the API server's OpenAPI v3 documents, which
// lists of each kind are maps keyed by item fields: the
// x-kubernetes-list-map-keys (or x-kubernetes-patch-merge-key) that built-in
// types declare and that CRD schemas carry through. The diff stage uses it
// to compare containers by name rather than by position.
package listkeys

import (
	"log/slog"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/openapi"
	"k8s.io/client-go/openapi3"

	"github.com/kubediff/kubediff/pkg/diff"
)

// Source fetches and caches KeyTrees, one OpenAPI document per group and
// version, on first use.
type Source struct {
	root openapi3.Root
	log  *slog.Logger

	mu   sync.Mutex
	byGV map[schema.GroupVersion]*groupVersion
}

type groupVersion struct {
	once  sync.Once
	kinds map[string]*diff.KeyTree
}

// New returns a Source reading from client (discovery.OpenAPIV3()).
func New(client openapi.Client, log *slog.Logger) *Source {
	if log == nil {
		log = slog.Default()
	}
	return &Source{root: openapi3.NewRoot(client), log: log, byGV: map[schema.GroupVersion]*groupVersion{}}
}

// KeyTree implements diff.ListKeys. When the document cannot be read, the
// kind's lists are compared by position and one warning is logged.
func (s *Source) KeyTree(gvk schema.GroupVersionKind) *diff.KeyTree {
	gv := gvk.GroupVersion()
	s.mu.Lock()
	entry, ok := s.byGV[gv]
	if !ok {
		entry = &groupVersion{}
		s.byGV[gv] = entry
	}
	s.mu.Unlock()
	entry.once.Do(func() {
		doc, err := s.root.GVSpecAsMap(gv)
		if err != nil {
			s.log.Warn("no OpenAPI schema: lists of this API are compared by position", "groupVersion", gv.String(), "err", err)
			return
		}
		entry.kinds = FromOpenAPI(doc, gv)
	})
	return entry.kinds[gvk.Kind]
}

// FromOpenAPI builds the KeyTree of every kind of gv in an OpenAPI v3
// document.
func FromOpenAPI(doc map[string]any, gv schema.GroupVersion) map[string]*diff.KeyTree {
	components, _ := doc["components"].(map[string]any)
	schemas, _ := components["schemas"].(map[string]any)
	b := &builder{schemas: schemas, built: map[string]*diff.KeyTree{}}
	kinds := map[string]*diff.KeyTree{}
	for name, raw := range schemas {
		sch, _ := raw.(map[string]any)
		for _, kind := range kindsOf(sch, gv) {
			kinds[kind] = b.ref(name)
		}
	}
	return kinds
}

// kindsOf returns the kinds a schema declares for gv.
func kindsOf(sch map[string]any, gv schema.GroupVersion) []string {
	gvks, _ := sch["x-kubernetes-group-version-kind"].([]any)
	var out []string
	for _, raw := range gvks {
		m, _ := raw.(map[string]any)
		if m["group"] == gv.Group && m["version"] == gv.Version {
			if kind, ok := m["kind"].(string); ok {
				out = append(out, kind)
			}
		}
	}
	return out
}

type builder struct {
	schemas map[string]any
	built   map[string]*diff.KeyTree // by schema name; shared and cycle-safe
}

func (b *builder) ref(name string) *diff.KeyTree {
	if t, ok := b.built[name]; ok {
		return t
	}
	t := &diff.KeyTree{}
	b.built[name] = t // before filling in: schemas refer to themselves
	sch, _ := b.schemas[name].(map[string]any)
	b.fill(t, sch)
	return t
}

// node builds the tree of an inline schema, following $ref and allOf.
func (b *builder) node(sch map[string]any) *diff.KeyTree {
	if ref, ok := sch["$ref"].(string); ok {
		return b.ref(strings.TrimPrefix(ref, "#/components/schemas/"))
	}
	if all, ok := sch["allOf"].([]any); ok && len(all) == 1 {
		if inner, ok := all[0].(map[string]any); ok {
			return b.node(inner)
		}
	}
	t := &diff.KeyTree{}
	b.fill(t, sch)
	return t
}

func (b *builder) fill(t *diff.KeyTree, sch map[string]any) {
	if keys := stringList(sch["x-kubernetes-list-map-keys"]); len(keys) > 0 {
		t.Keys = keys
	} else if key, ok := sch["x-kubernetes-patch-merge-key"].(string); ok {
		t.Keys = []string{key}
	}
	if items, ok := sch["items"].(map[string]any); ok {
		t.Items = b.node(items)
	}
	if props, ok := sch["properties"].(map[string]any); ok {
		t.Fields = make(map[string]*diff.KeyTree, len(props))
		for name, raw := range props {
			if p, ok := raw.(map[string]any); ok {
				t.Fields[name] = b.node(p)
			}
		}
	}
	if ap, ok := sch["additionalProperties"].(map[string]any); ok {
		t.Values = b.node(ap)
	}
}

func stringList(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// Package listkeys reads, from the API server's OpenAPI v3 documents, which
// lists of each kind are maps keyed by item fields: the
// x-kubernetes-list-map-keys (or x-kubernetes-patch-merge-key) that built-in
// types declare and that CRD schemas carry through. The diff stage uses it
// to compare containers by name rather than by position.
package listkeys

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/openapi"

	"github.com/kubediff/kubediff/pkg/diff"
)

// Source fetches and caches KeyTrees, one OpenAPI document per group and
// version, on first use. Refresh drops those whose document changed (a
// CRD's schema upgraded in place), so they are read again.
type Source struct {
	client openapi.Client
	log    *slog.Logger

	mu   sync.Mutex
	byGV map[schema.GroupVersion]*groupVersion
}

type groupVersion struct {
	once  sync.Once
	url   string // the document's address, with its content hash
	kinds map[string]*diff.KeyTree
}

// New returns a Source reading from client (discovery.OpenAPIV3()).
func New(client openapi.Client, log *slog.Logger) *Source {
	if log == nil {
		log = slog.Default()
	}
	return &Source{client: client, log: log, byGV: map[schema.GroupVersion]*groupVersion{}}
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
		url, doc, err := s.document(gv)
		if err != nil {
			s.log.Warn("no OpenAPI schema: lists of this API are compared by position", "groupVersion", gv.String(), "err", err)
			return
		}
		entry.kinds = FromOpenAPI(doc, gv)
		s.mu.Lock()
		entry.url = url // Refresh reads it under the lock
		s.mu.Unlock()
	})
	return entry.kinds[gvk.Kind]
}

// document reads gv's OpenAPI v3 document and the address it came from.
func (s *Source) document(gv schema.GroupVersion) (string, map[string]any, error) {
	paths, err := s.client.Paths()
	if err != nil {
		return "", nil, err
	}
	p, ok := paths[pathOf(gv)]
	if !ok {
		return "", nil, fmt.Errorf("the server lists no OpenAPI document for %s", gv)
	}
	raw, err := p.Schema(runtime.ContentTypeJSON)
	if err != nil {
		return "", nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return "", nil, err
	}
	return p.ServerRelativeURL(), doc, nil
}

// Refresh drops the key trees whose OpenAPI document changed since they
// were read: its address carries a hash of its content, so one small
// request tells. Called at each rediscovery, it makes a CRD upgraded in
// place (a list newly keyed) compared by its new keys at once.
func (s *Source) Refresh() {
	if s == nil {
		return
	}
	paths, err := s.client.Paths()
	if err != nil {
		return // the next rediscovery tries again
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for gv, entry := range s.byGV {
		if entry.url == "" {
			continue // not read yet, or unreadable (warned once)
		}
		if p, ok := paths[pathOf(gv)]; !ok || p.ServerRelativeURL() != entry.url {
			delete(s.byGV, gv)
		}
	}
}

// pathOf is gv's key in the OpenAPI v3 discovery document.
func pathOf(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
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

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
		url, raw, err := s.document(gv)
		if err == nil {
			entry.kinds, err = FromOpenAPI(raw, gv)
		}
		if err != nil {
			s.log.Warn("no OpenAPI schema: lists of this API are compared by position", "groupVersion", gv.String(), "err", err)
			return
		}
		s.mu.Lock()
		entry.url = url // Refresh reads it under the lock
		s.mu.Unlock()
	})
	return entry.kinds[gvk.Kind]
}

// document reads gv's OpenAPI v3 document and the address it came from.
func (s *Source) document(gv schema.GroupVersion) (string, []byte, error) {
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
	return p.ServerRelativeURL(), raw, nil
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

// FromOpenAPI builds the KeyTree of every kind of gv from an OpenAPI v3
// document. Only what the trees need is decoded: descriptions, formats
// and validations, most of a document, are skipped as they are read
// (BenchmarkFromOpenAPI: core/v1's 1.6 MB document decoded whole took
// 6.1 MB of heap, decoded for the trees 0.6 MB).
func FromOpenAPI(raw []byte, gv schema.GroupVersion) (map[string]*diff.KeyTree, error) {
	var doc struct {
		Components struct {
			Schemas map[string]*openAPISchema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	schemas := doc.Components.Schemas
	b := &builder{schemas: schemas, built: map[string]*diff.KeyTree{}}
	kinds := map[string]*diff.KeyTree{}
	for name, sch := range schemas {
		for _, kind := range sch.kindsOf(gv) {
			kinds[kind] = b.ref(name)
		}
	}
	return kinds, nil
}

// openAPISchema is what a KeyTree needs of an OpenAPI schema.
type openAPISchema struct {
	Ref                  string                    `json:"$ref"`
	AllOf                []*openAPISchema          `json:"allOf"`
	Items                *openAPISchema            `json:"items"`
	Properties           map[string]*openAPISchema `json:"properties"`
	AdditionalProperties schemaOrBool              `json:"additionalProperties"`
	ListMapKeys          []string                  `json:"x-kubernetes-list-map-keys"`
	PatchMergeKey        string                    `json:"x-kubernetes-patch-merge-key"`
	GroupVersionKinds    []struct {
		Group, Version, Kind string
	} `json:"x-kubernetes-group-version-kind"`
}

// schemaOrBool is additionalProperties: a schema, or true or false
// (which say nothing of lists).
type schemaOrBool struct{ *openAPISchema }

func (s *schemaOrBool) UnmarshalJSON(data []byte) error {
	if len(data) == 0 || data[0] != '{' {
		return nil
	}
	s.openAPISchema = &openAPISchema{}
	return json.Unmarshal(data, s.openAPISchema)
}

// kindsOf returns the kinds a schema declares for gv.
func (sch *openAPISchema) kindsOf(gv schema.GroupVersion) []string {
	if sch == nil {
		return nil
	}
	var out []string
	for _, gvk := range sch.GroupVersionKinds {
		if gvk.Group == gv.Group && gvk.Version == gv.Version && gvk.Kind != "" {
			out = append(out, gvk.Kind)
		}
	}
	return out
}

type builder struct {
	schemas map[string]*openAPISchema
	built   map[string]*diff.KeyTree // by schema name; shared and cycle-safe
}

func (b *builder) ref(name string) *diff.KeyTree {
	if t, ok := b.built[name]; ok {
		return t
	}
	t := &diff.KeyTree{}
	b.built[name] = t // before filling in: schemas refer to themselves
	b.fill(t, b.schemas[name])
	return t
}

// node builds the tree of an inline schema, following $ref and allOf.
func (b *builder) node(sch *openAPISchema) *diff.KeyTree {
	if sch.Ref != "" {
		return b.ref(strings.TrimPrefix(sch.Ref, "#/components/schemas/"))
	}
	if len(sch.AllOf) == 1 && sch.AllOf[0] != nil {
		return b.node(sch.AllOf[0])
	}
	t := &diff.KeyTree{}
	b.fill(t, sch)
	return t
}

func (b *builder) fill(t *diff.KeyTree, sch *openAPISchema) {
	if sch == nil {
		return
	}
	if len(sch.ListMapKeys) > 0 {
		t.Keys = sch.ListMapKeys
	} else if sch.PatchMergeKey != "" {
		t.Keys = []string{sch.PatchMergeKey}
	}
	if sch.Items != nil {
		t.Items = b.node(sch.Items)
	}
	if sch.Properties != nil {
		t.Fields = make(map[string]*diff.KeyTree, len(sch.Properties))
		for name, p := range sch.Properties {
			if p != nil {
				t.Fields[name] = b.node(p)
			}
		}
	}
	if ap := sch.AdditionalProperties.openAPISchema; ap != nil {
		t.Values = b.node(ap)
	}
}

package watcher

import (
	"bytes"
	"fmt"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/klauspost/compress/s2"

	"github.com/kubediff/kubediff/pkg/objectjson"
)

// compactObject is how the watcher caches an object: its identity, which
// the store and the reflector need, plus the rest as JSON, compressed
// against its type's dictionary (packing.go). As nested maps an object
// costs 3–4 bytes of memory per byte of JSON; as JSON about one; packed
// about a third. It is unpacked and decoded only when the object changes.
//
// The identity is four strings rather than a metav1.ObjectMeta, whose
// other fields would cost 170 bytes an object, empty; the reflector reads
// it through GetObjectMeta.
type compactObject struct {
	Namespace, Name string
	UID             types.UID
	ResourceVersion string
	// annotations are a bookmark's: the reflector looks there for the end
	// of a streaming list. Cached objects keep theirs in raw.
	annotations map[string]string

	raw  []byte
	dict *s2.Dict // what raw is packed with; nil: raw is plain JSON
	// decoded is the object as raw decodes, kept from the watch event
	// until its update has been diffed, so it is not decoded twice.
	decoded map[string]any
}

var (
	_ runtime.Object            = (*compactObject)(nil)
	_ metav1.ObjectMetaAccessor = (*compactObject)(nil)
)

// GetObjectKind implements runtime.Object; the kind is inside raw.
func (c *compactObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object. raw is never modified, so it is
// shared.
func (c *compactObject) DeepCopyObject() runtime.Object {
	cp := *c
	cp.annotations = maps.Clone(c.annotations)
	cp.decoded = nil // a copy is for reading; decoded is the diff's
	return &cp
}

// GetObjectMeta implements metav1.ObjectMetaAccessor, which is how the
// reflector reads resourceVersions and a bookmark's annotations.
func (c *compactObject) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name, UID: c.UID, ResourceVersion: c.ResourceVersion, Annotations: c.annotations}
}

// compact returns u in the cache form, packed by p (nil: not packed).
func compact(u *unstructured.Unstructured, keepDecoded bool, p *typePacker) (*compactObject, error) {
	raw, release, err := objectjson.Encode(u.Object)
	if err != nil {
		return nil, fmt.Errorf("compact %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	defer release()
	c := &compactObject{Namespace: u.GetNamespace(), Name: u.GetName(), UID: u.GetUID(), ResourceVersion: u.GetResourceVersion()}
	if c.raw, c.dict = p.pack(raw); c.dict == nil {
		c.raw = bytes.Clone(raw) // pack kept the encoder's buffer
	}
	if keepDecoded {
		c.decoded = u.Object
	}
	return c, nil
}

// json returns the object's JSON.
func (c *compactObject) json() ([]byte, error) {
	if c.dict == nil {
		return c.raw, nil
	}
	raw, err := unpack(c.dict, c.raw)
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", c.Namespace, c.Name, err)
	}
	return raw, nil
}

// expand returns the object behind a cached one.
func expand(c *compactObject) (*unstructured.Unstructured, error) {
	if c.decoded != nil {
		return &unstructured.Unstructured{Object: c.decoded}, nil
	}
	return decodeCompact(c)
}

// decodeCompact decodes a cached object from its compact form alone,
// which never changes once cached (decoded does: the reflector's
// goroutine drops it), so any goroutine may call it.
func decodeCompact(c *compactObject) (*unstructured.Unstructured, error) {
	raw, err := c.json()
	if err != nil {
		return nil, err
	}
	obj, err := decodeObject(raw)
	if err != nil {
		return nil, fmt.Errorf("expand %s/%s: %w", c.Namespace, c.Name, err)
	}
	return &unstructured.Unstructured{Object: obj}, nil
}

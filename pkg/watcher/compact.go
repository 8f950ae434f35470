package watcher

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsjson "sigs.k8s.io/json"
)

// compactObject is how the watcher caches an object: its identity, which
// the store and the reflector need, plus the rest as compact JSON. As
// nested maps an object costs 3–4 bytes of memory per byte of JSON; this
// form costs about one. It is decoded only when the object changes.
type compactObject struct {
	metav1.ObjectMeta // namespace, name, uid, resourceVersion; a bookmark also has annotations
	raw               []byte
	// decoded is the object as raw decodes, kept from the watch event
	// until its update has been diffed, so it is not decoded twice.
	decoded map[string]any
}

var _ runtime.Object = (*compactObject)(nil)

// GetObjectKind implements runtime.Object; the kind is inside raw.
func (c *compactObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object. raw is never modified, so it is
// shared.
func (c *compactObject) DeepCopyObject() runtime.Object {
	return &compactObject{ObjectMeta: *c.DeepCopy(), raw: c.raw}
}

func compact(u *unstructured.Unstructured, keepDecoded bool) (*compactObject, error) {
	raw, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("compact %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	c := &compactObject{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: u.GetNamespace(), Name: u.GetName(), UID: u.GetUID(), ResourceVersion: u.GetResourceVersion(),
		},
		raw: raw,
	}
	if keepDecoded {
		c.decoded = u.Object
	}
	return c, nil
}

// expand returns the object behind a cached one.
func expand(c *compactObject) (*unstructured.Unstructured, error) {
	if c.decoded != nil {
		return &unstructured.Unstructured{Object: c.decoded}, nil
	}
	u := &unstructured.Unstructured{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(c.raw, &u.Object); err != nil {
		return nil, fmt.Errorf("expand %s/%s: %w", c.Namespace, c.Name, err)
	}
	return u, nil
}

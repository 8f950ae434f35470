package watcher

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// compactObject is how the informer caches an object: its identity, which
// the cache and the resync check need, plus the rest as compact JSON. As
// nested maps an object costs 3–4 bytes of memory per byte of JSON; this
// form costs about one. It is decoded only when the object changes.
type compactObject struct {
	metav1.ObjectMeta // only namespace, name, uid and resourceVersion are set
	raw               []byte
}

var _ runtime.Object = (*compactObject)(nil)

// GetObjectKind implements runtime.Object; the kind is inside raw.
func (c *compactObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object. raw is never modified, so it is
// shared.
func (c *compactObject) DeepCopyObject() runtime.Object {
	return &compactObject{ObjectMeta: *c.ObjectMeta.DeepCopy(), raw: c.raw}
}

func compact(u *unstructured.Unstructured) (*compactObject, error) {
	raw, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("compact %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return &compactObject{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: u.GetNamespace(), Name: u.GetName(), UID: u.GetUID(), ResourceVersion: u.GetResourceVersion(),
		},
		raw: raw,
	}, nil
}

// expand returns the object behind what the informer handed over: a cached
// compact object, or an unstructured one as is.
func expand(obj any) (*unstructured.Unstructured, error) {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		return o, nil
	case *compactObject:
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(o.raw); err != nil {
			return nil, fmt.Errorf("expand %s/%s: %w", o.Namespace, o.Name, err)
		}
		return u, nil
	}
	return nil, fmt.Errorf("unexpected object %T in the cache", obj)
}

// resourceVersion reads an object's resourceVersion without expanding it.
func resourceVersion(obj any) string {
	if m, ok := obj.(metav1.Object); ok {
		return m.GetResourceVersion()
	}
	return ""
}

package drift

import (
	"container/list"
	"crypto/sha256"
	"encoding/json"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// maxAppliedStates bounds the last-applied states kept per object: the
// one before a write is asked for after the state the write made was
// seen, which may carry a new one.
const maxAppliedStates = 4

// AppliedBook keeps what GitOps-owned objects' last-applied-configuration
// annotations declare, read as the watch decodes each object (before the
// cache prunes the annotation) and redacted as the object is: a Secret's
// values never sit in it in the clear. It decodes an annotation only
// when it differs from the one seen last (a hash tells), so an update
// that keeps it costs a hash. Safe for concurrent use.
type AppliedBook struct {
	mu      sync.Mutex
	objects map[string]*appliedStates
	order   *list.List // of *appliedStates, the most recently observed at the front
	max     int
}

type appliedStates struct {
	uid    string
	sum    [sha256.Size]byte // of the annotation seen last
	states []appliedState    // oldest first
	elem   *list.Element
}

type appliedState struct {
	rv       uint64
	declared map[string]any
}

// NewAppliedBook returns an empty book.
func NewAppliedBook() *AppliedBook {
	return &AppliedBook{objects: map[string]*appliedStates{}, order: list.New(), max: maxObjects}
}

// Observe reads obj's last-applied-configuration if obj carries a GitOps
// mark; redact prunes and redacts a decoded object as the cache does
// obj's. obj is not modified. A nil book observes nothing.
func (b *AppliedBook) Observe(obj *unstructured.Unstructured, redact func(*unstructured.Unstructured) *unstructured.Unstructured) {
	if b == nil {
		return
	}
	raw := stringsAt(obj, "annotations").get(lastAppliedAnnotation)
	if raw == "" {
		return
	}
	if _, ok, _ := ownerOf(obj); !ok {
		return
	}
	rv, err := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	if err != nil {
		return
	}
	uid, sum := string(obj.GetUID()), sha256.Sum256([]byte(raw))
	b.mu.Lock()
	seen := b.objects[uid]
	b.mu.Unlock()
	if seen != nil && seen.sum == sum {
		return
	}
	var decoded map[string]any
	if json.Unmarshal([]byte(raw), &decoded) != nil {
		return // not what kubectl writes: nothing declared is known from it
	}
	declared := redact(&unstructured.Unstructured{Object: decoded})
	if declared == nil {
		return
	}
	b.note(uid, sum, appliedState{rv: rv, declared: declared.Object})
}

func (b *AppliedBook) note(uid string, sum [sha256.Size]byte, s appliedState) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.objects[uid]
	if st == nil {
		st = &appliedStates{uid: uid}
		st.elem = b.order.PushFront(st)
		b.objects[uid] = st
		for b.order.Len() > b.max {
			oldest := b.order.Remove(b.order.Back()).(*appliedStates)
			delete(b.objects, oldest.uid)
		}
	} else {
		b.order.MoveToFront(st.elem)
	}
	st.sum = sum
	st.states = append(st.states, s)
	if len(st.states) > maxAppliedStates {
		st.states = append(st.states[:0:0], st.states[len(st.states)-maxAppliedStates:]...)
	}
}

// At is what the object's last-applied-configuration declared at
// resourceVersion, nil when none is known.
func (b *AppliedBook) At(uid, resourceVersion string) map[string]any {
	rv, err := strconv.ParseUint(resourceVersion, 10, 64)
	if err != nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.objects[uid]
	if st == nil {
		return nil
	}
	for i := len(st.states) - 1; i >= 0; i-- {
		if st.states[i].rv <= rv {
			return st.states[i].declared
		}
	}
	return nil
}

// Forget drops what is kept of uid: the object is gone.
func (b *AppliedBook) Forget(uid string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if st := b.objects[uid]; st != nil {
		b.order.Remove(st.elem)
		delete(b.objects, uid)
	}
}

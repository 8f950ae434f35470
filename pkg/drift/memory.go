package drift

import (
	"container/list"
	"time"
)

// maxObjects bounds the GitOps-owned objects whose declared state and
// open drift are kept in memory: beyond it the least recently changed
// one is forgotten (its next outside change says declared "unknown"
// until its owner writes it again, as after a restart).
const maxObjects = 10000

// objectState is what is known of one GitOps-owned object.
type objectState struct {
	uid string
	// declared is the object's state right after its owner's last write
	// (nil: not seen since kubediff started), without its status. Its
	// maps are the watch event's, shared and never modified.
	declared map[string]any
	// open is the drift not put back yet (nil: none).
	open *openDrift
	elem *list.Element
}

// openDrift is the drift an outside change started, until a write puts
// every field back.
type openDrift struct {
	id    string    // the record that started it
	since time.Time // that record's time
	// namespace and owner are the object's namespace and its owner
	// (OwnerLabel), for the metric of open drift (Transition).
	namespace, owner string
	// fields are the drifted fields' pointers and declared values
	// (absent for a field added outside the declared state).
	fields map[string]any
}

// memory is the objects' states, bounded by maxObjects, the least
// recently used first to go. Its caller holds the Classifier's lock.
type memory struct {
	objects map[string]*objectState
	order   *list.List // of *objectState, the most recently used at the front
	max     int
	// evicted is told of each state the bound let go (nil: no one).
	evicted func(*objectState)
}

func newMemory(max int) *memory {
	return &memory{objects: map[string]*objectState{}, order: list.New(), max: max}
}

// get is uid's state, nil when none is kept.
func (m *memory) get(uid string) *objectState {
	st := m.objects[uid]
	if st != nil {
		m.order.MoveToFront(st.elem)
	}
	return st
}

// ensure is uid's state, made if none is kept.
func (m *memory) ensure(uid string) *objectState {
	if st := m.get(uid); st != nil {
		return st
	}
	st := &objectState{uid: uid}
	st.elem = m.order.PushFront(st)
	m.objects[uid] = st
	for m.order.Len() > m.max {
		oldest := m.order.Back()
		m.order.Remove(oldest)
		gone := oldest.Value.(*objectState)
		delete(m.objects, gone.uid)
		if m.evicted != nil {
			m.evicted(gone)
		}
	}
	return st
}

// forget drops uid's state: the object is gone.
func (m *memory) forget(uid string) {
	if st := m.objects[uid]; st != nil {
		m.order.Remove(st.elem)
		delete(m.objects, uid)
	}
}

// len is how many objects are kept.
func (m *memory) len() int { return len(m.objects) }

package historyapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/diff"
)

// View is how a kept state is shown in a two-moment diff: the fields
// watch's rules ignore left out. Nil shows everything kept.
type View func(obj map[string]any, r change.Resource) map[string]any

// keptAt is the object's kept state at t through the current redaction
// rules: every way the history answers a state (the CLI's state dir, the
// HTTP API, MCP) reads it here, so none shows what an older kubediff
// kept in the clear.
func keptAt(reader Store, id change.ObjectID, t time.Time) ([]byte, error) {
	raw, err := reader.At(id, t)
	if err != nil {
		return nil, err
	}
	return redactKept(id, raw)
}

// redactKept passes a kept state through the current redaction rules,
// which may hide more than those it was kept under: an upgrade's new rule
// then holds for what the history kept before it, too.
func redactKept(id change.ObjectID, raw []byte) ([]byte, error) {
	d := watchDiffer()
	if d == nil {
		return nil, errors.New("history: the redaction rules cannot be built")
	}
	obj, err := decodeState(raw)
	if err != nil {
		return nil, err
	}
	return json.Marshal(d.Redact(obj, resourceOf(id)))
}

// decodeState reads a kept state, numbers as they were written.
func decodeState(raw []byte) (map[string]any, error) {
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("history: a kept state cannot be read: %w", err)
	}
	return obj, nil
}

func resourceOf(id change.ObjectID) change.Resource {
	group, resource, _, _ := id.Parts()
	return change.Resource{GVR: schema.GroupVersionResource{Group: group, Resource: resource}}
}

// WatchView shows kept states through the built-in quiet rules, as watch
// prints changes by default: no managedFields, resourceVersion or
// generation, no heartbeat times. A diff of two moments then leads with
// what a person changed, not with bookkeeping.
func WatchView() View {
	if d := watchDiffer(); d != nil {
		return d.Shown
	}
	return nil
}

// watchDiffer is a Differ with the built-in rules (nil if they cannot be
// built, which only a broken build can cause).
var watchDiffer = sync.OnceValue(func() *diff.Differ {
	d, err := diff.New(diff.Options{Rules: diff.Rules{Defaults: diff.AllDefaults}})
	if err != nil {
		return nil
	}
	return d
})

// show applies view to a kept state of the object id names (raw JSON).
func (view View) show(id change.ObjectID, raw []byte) ([]byte, error) {
	if view == nil {
		return raw, nil
	}
	obj, err := decodeState(raw)
	if err != nil {
		return nil, err
	}
	return json.Marshal(view(obj, resourceOf(id)))
}

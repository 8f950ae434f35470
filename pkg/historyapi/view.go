package historyapi

import (
	"encoding/json"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/diff"
	"github.com/kubediff/kubediff/pkg/history"
)

// View is how a kept state is shown in a two-moment diff: the fields
// watch's rules ignore left out. Nil shows everything kept.
type View func(obj map[string]any, r change.Resource) map[string]any

// WatchView shows kept states through the built-in quiet rules, as watch
// prints changes by default: no managedFields, resourceVersion or
// generation, no heartbeat times. A diff of two moments then leads with
// what a person changed, not with bookkeeping.
func WatchView() View {
	defaultViewOnce.Do(func() {
		d, err := diff.New(diff.Options{Rules: diff.Rules{Defaults: diff.AllDefaults}})
		if err == nil {
			defaultView = d.Shown
		}
	})
	return defaultView
}

var (
	defaultViewOnce sync.Once
	defaultView     View
)

// show applies view to a kept state of the object id names (raw JSON).
func (view View) show(id history.ObjectID, raw []byte) ([]byte, error) {
	if view == nil {
		return raw, nil
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	group, resource, _, _ := id.Parts()
	return json.Marshal(view(obj, change.Resource{GVR: schema.GroupVersionResource{Group: group, Resource: resource}}))
}

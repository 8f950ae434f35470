// Package discovery finds which resource types the API server offers that
// kubediff can watch: every type with list and watch verbs, CRDs included,
// one version each, and no type reachable through two APIs.
package discovery

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/kubediff/kubediff/pkg/change"
)

// Resource is one watchable type. It is defined in pkg/change, below
// everything that reads changes; discovery names it here because it is
// what discovery finds.
type Resource = change.Resource

// duplicateAPIs lists types that the server offers under two groups for the
// same stored objects; the key is skipped when the value is also offered.
var duplicateAPIs = map[schema.GroupResource]schema.GroupResource{
	// events.k8s.io/v1 Events are the core v1 Events seen through another
	// API; core is kept because it is what `kubectl get events` shows.
	{Group: "events.k8s.io", Resource: "events"}: {Group: "", Resource: "events"},
}

// Discoverer lists the watchable resource types of one API server.
type Discoverer struct {
	client discovery.DiscoveryInterface
}

// New returns a Discoverer using the given discovery client. Pass a cached
// client if repeated calls should not each cost a round of requests.
func New(client discovery.DiscoveryInterface) *Discoverer {
	return &Discoverer{client: client}
}

// Catalog is every type the server offers.
type Catalog struct {
	// Watchable types, sorted by group then resource.
	Watchable []Resource
	// NotWatchable types, with the reason.
	NotWatchable []Status
	// Unavailable group/versions failed discovery this time; their types
	// may still exist.
	Unavailable []schema.GroupVersion
	// Events is the API Events are read through as facts about objects
	// (docs/why.md): events.k8s.io/v1 when offered, else core v1; nil
	// when neither can be listed and watched.
	Events *Resource
}

// Resources returns every type the server offers. Groups whose discovery
// failed (an aggregated API that is down, say) are reported in the returned
// error while the rest are still returned, so the caller can warn and go
// on; a nil Watchable with an error means nothing could be discovered.
func (d *Discoverer) Resources(ctx context.Context) (Catalog, error) {
	if err := ctx.Err(); err != nil {
		return Catalog{}, err
	}
	lists, err := d.client.ServerPreferredResources()
	var partial error
	var unavailable []schema.GroupVersion
	if err != nil {
		var groupErr *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &groupErr) || len(lists) == 0 {
			return Catalog{}, fmt.Errorf("discover API resources: %w", err)
		}
		partial = describeGroupFailures(groupErr)
		for gv := range groupErr.Groups {
			unavailable = append(unavailable, gv)
		}
	}
	return Catalog{Watchable: Watchable(lists), NotWatchable: notWatchable(lists), Unavailable: unavailable, Events: eventsAPI(lists)}, partial
}

// eventsAPI is the Events type read for facts: events.k8s.io/v1, which
// names the object an Event regards and its series, else core v1.
func eventsAPI(lists []*metav1.APIResourceList) *Resource {
	var found *Resource
	for _, r := range listAndWatch(lists) {
		switch r.GVR {
		case schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}:
			return &r
		case schema.GroupVersionResource{Version: "v1", Resource: "events"}:
			found = &r
		}
	}
	return found
}

// notWatchable lists the types Watchable leaves out, and why.
func notWatchable(lists []*metav1.APIResourceList) []Status {
	watchable := map[schema.GroupVersionResource]bool{}
	for _, r := range Watchable(lists) {
		watchable[r.GVR] = true
	}
	var out []Status
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			gvr := gv.WithResource(r.Name)
			if strings.Contains(r.Name, "/") || watchable[gvr] {
				continue
			}
			reason := "no list and watch verbs"
			if keep, dup := duplicateAPIs[gvr.GroupResource()]; dup && slices.Contains(r.Verbs, "watch") {
				reason = "same objects as " + keep.String() + ", which is watched instead"
			}
			out = append(out, Status{
				Resource: Resource{GVR: gvr, Kind: r.Kind, Namespaced: r.Namespaced, Singular: r.SingularName, ShortNames: r.ShortNames},
				State:    StateNotWatchable, Reason: reason,
			})
		}
	}
	return out
}

// Watchable filters discovery results down to the types kubediff watches.
func Watchable(lists []*metav1.APIResourceList) []Resource {
	out := listAndWatch(lists)
	offered := map[schema.GroupResource]bool{}
	for _, r := range out {
		offered[r.GVR.GroupResource()] = true
	}
	out = slices.DeleteFunc(out, func(r Resource) bool {
		keep, dup := duplicateAPIs[r.GVR.GroupResource()]
		return dup && offered[keep]
	})
	slices.SortFunc(out, byGroupResource)
	return out
}

// listAndWatch lists every type that can be listed and watched, the
// duplicates included.
func listAndWatch(lists []*metav1.APIResourceList) []Resource {
	var out []Resource
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			// Subresources (pods/log, deployments/scale) are not objects of
			// their own.
			if strings.Contains(r.Name, "/") {
				continue
			}
			if !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "watch") {
				continue
			}
			res := Resource{
				GVR:        gv.WithResource(r.Name),
				Kind:       r.Kind,
				Namespaced: r.Namespaced,
				Singular:   r.SingularName,
				ShortNames: r.ShortNames,
			}
			out = append(out, res)
		}
	}
	return out
}

// byGroupResource orders resources as kubectl api-resources lists them:
// by group, then resource name.
func byGroupResource(a, b Resource) int {
	return cmp.Or(cmp.Compare(a.GVR.Group, b.GVR.Group), cmp.Compare(a.GVR.Resource, b.GVR.Resource))
}

func describeGroupFailures(err *discovery.ErrGroupDiscoveryFailed) error {
	var errs []error
	for gv, gerr := range err.Groups {
		errs = append(errs, fmt.Errorf("API group %s is unavailable, its types are not watched: %w", gv, gerr))
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}

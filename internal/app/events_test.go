package app

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/discovery"
)

// A type is narrowed when a target of the plan has a label selector, and
// every type is when the global selector is set: an Event about an
// object of such a type that kubediff does not hold is about one left out.
func TestObjectLookupKnowsWhatLabelSelectorsNarrow(t *testing.T) {
	pods := change.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod", Namespaced: true}
	nodes := change.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, Kind: "Node"}
	plan := discovery.Plan{All: []change.Resource{pods, nodes},
		Targets: []discovery.Target{{Resource: pods, Namespace: "a"}, {Resource: pods, Namespace: "b", LabelSelector: "app=web", Narrowed: true},
			{Resource: nodes, FieldSelector: "metadata.name=n1"}}}
	perType := &objectLookup{}
	perType.learn(plan)
	every := &objectLookup{everyType: true}
	every.learn(plan)
	for _, tc := range []struct {
		name   string
		lookup *objectLookup
		r      change.Resource
		want   bool
	}{{"pods, one watch selected", perType, pods, true}, {"nodes, named on the command line", perType, nodes, false}, {"nodes, global selector", every, nodes, true}} {
		if got := tc.lookup.Narrowed(tc.r); got != tc.want {
			t.Errorf("%s: narrowed %v, want %v", tc.name, got, tc.want)
		}
	}
}
